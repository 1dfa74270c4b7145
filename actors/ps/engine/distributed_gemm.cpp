#include "actors/ps/engine/distributed_gemm.hpp"

#include <chrono>
#include <algorithm>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/planner/cost_model.hpp"
#include "schema/errors.hpp"
#include "training/elapsed.hpp"

namespace cleave {

namespace {

double seconds_now() {
  return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count();
}

// A plan that leaves the product on the PS: local, or with no tile to send.
bool stays_here(const plan& p) { return p.local || p.tiles.empty(); }

// The forward products' operands are read again by the step's backward
// products, whose plans name the blocks the devices cached (placement.cpp).
bool read_again_this_step(gemm_role role) {
  return role == gemm_role::forward || role == gemm_role::attn_scores ||
         role == gemm_role::attn_values;
}

}  // namespace

distributed_gemm::distributed_gemm(caf::actor_system& sys, caf::actor planner,
                                   engine_options opts)
    : self_(sys), opts_(opts),
      fleet_(self_, std::move(planner), opts_.find_planner, opts_.stop_on_failure, acc_),
      egress_(opts_.paced_egress), ingress_(opts_.paced_ingress),
      secret_(std::random_device{}()), trust_(opts_.trust) {
  const auto me = caf::actor_cast<caf::actor>(self_);
  self_->send(fleet_.planner(), subscribe_atom::value, me);
}

void distributed_gemm::finish_step() {
  if (!in_step_) return;
  in_step_ = false;
  predictor_.observe(seconds_since(step_began_),
                     acc_.totals.wait_seconds - at_step_begin_.wait_seconds,
                     acc_.totals.predicted_wait_seconds - at_step_begin_.predicted_wait_seconds);
}

runtime_accounts distributed_gemm::accounts() const {
  runtime_accounts out = acc_;
  out.prediction = predictor_.compared();
  out.ps_profile_seconds = predictor_.ps_profile_seconds();
  out.egress_seconds = egress_.waited_seconds();
  out.ingress_seconds = ingress_.waited_seconds();
  return out;
}

caf::error distributed_gemm::begin_step(uint64_t step) {
  finish_step();
  in_step_ = true;
  step_began_ = clock_type::now();
  at_step_begin_ = acc_.totals;
  if (!fleet_.stopped_by().empty())
    return fail(fleet_.stopped_by() + "; --failure-policy=restart stops the run here: resume it from the "
                "last checkpoint with --resume");
  step_ = step;
  gemm_seq_ = 0;
  plans_.begin_step();
  sent_.clear();
  snapshots_.begin_step();
  return fleet_.refresh();
}

void distributed_gemm::begin_evaluation_batch() {
  finish_step();
  ++step_;
  gemm_seq_ = 0;
  plans_.begin_step();
  sent_.clear();
  snapshots_.begin_step();
}

gemm_problem distributed_gemm::problem_of(gemm_tag tag, int64_t m, int64_t n, int64_t k) const {
  gemm_problem g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.role = tag.role;
  g.sharers = static_cast<int32_t>(opts_.shards);  // the other shards use the fleet meanwhile
  g.element_bytes = operand_element_bytes(opts_.wire);  // the plan's bytes are the wire's
  g.result_element_bytes = result_element_bytes(opts_.wire);
  return g;
}

void distributed_gemm::run_local(const_view<float> a, bool ta, const_view<float> b, bool tb,
                                 mut_view<float> c, float beta) {
  const auto t0 = clock_type::now();
  // Devices are idle while the PS computes (a step's GEMMs run one after the
  // other), so one shard may use every core for its own products.
  const bool widen = opts_.shards == 1;
  if (widen) set_gemm_threads(compute_threads());
  gemm_local<float>(a, ta, b, tb, c, beta);
  if (widen) set_gemm_threads(1);
  acc_.totals.ps_compute_seconds += seconds_since(t0);
  ++acc_.local_gemms;
}

size_t distributed_gemm::inflight_batch::remaining() const {
  size_t n = 0;
  for (const auto& call : calls) n += call.remaining;
  return n;
}

std::pair<distributed_gemm::gemm_call*, distributed_gemm::pending_tile*>
distributed_gemm::inflight_batch::find(uint64_t step, const tile_key& k) {
  if (k.step == step)
    for (auto& call : calls)
      if (k.gemm == call.id && k.tile < call.tiles.size()) return {&call, &call.tiles[k.tile]};
  return {nullptr, nullptr};
}

void distributed_gemm::on_planner_lost(inflight_batch& batch) {
  if (!fleet_.follows_successors()) return;  // tiles on devices that left it time out
  spdlog::warn("the planner is gone mid-GEMM; waiting for its successor and its fleet");
  const double now = seconds_now();
  for (auto& call : batch.calls)
    if (call.failed_at < 0) call.failed_at = now;
  fleet_.follow_lost_planner();
  // Devices that left with the planner come back as new members, whose ids
  // may be the old ones: every unfinished tile goes out again (a result of
  // the old holder still counts if it comes first; the rest are dropped).
  sent_.forget_all();
  for (auto& call : batch.calls)
    for (auto& pt : call.tiles) {
      if (pt.done || pt.arrived) continue;
      pt.holders.clear();
      ++acc_.churn.tiles_reassigned;
      reassign(call, pt);
    }
}

void distributed_gemm::on_event(const fleet_event& ev, inflight_batch& batch) {
  if (!fleet_.on_event(ev)) return;
  window_.forget(ev.device);  // what waited for it goes elsewhere with its other tiles
  batch_view view = policy_view(batch);
  const double now = seconds_now();
  if (schedule_ != nullptr) {
    apply(schedule_->on_device_lost(now, ev.device, view, policy()), batch);
    return;
  }
  tile_schedule outside_a_wait(opts_.schedule, now, 0, view, policy());
  apply(outside_a_wait.on_device_lost(now, ev.device, view, policy()), batch);
}

void distributed_gemm::apply(const std::vector<schedule_action>& actions,
                             inflight_batch& batch) {
  for (const auto& a : actions) {
    auto& call = batch.calls[a.call];
    auto& pt = call.tiles[a.tile];
    switch (a.kind) {
      case schedule_action_kind::drop: {
        pt.holders.erase(std::find(pt.holders.begin(), pt.holders.end(), a.device));
        if (call.failed_at < 0) call.failed_at = seconds_now();
        break;
      }
      case schedule_action_kind::send:
        ++acc_.churn.tiles_reassigned;
        pt.where.device = a.device;
        send_task(call, pt, a.device, true);
        break;
      case schedule_action_kind::here:
        ++acc_.churn.tiles_reassigned;
        pt.where.device = -1;
        break;
      case schedule_action_kind::timed_out:
        spdlog::warn("tile step {} gemm {} tile {} timed out on device {}; computing it here",
                     step_, pt.key.gemm, pt.key.tile, a.device);
        pt.holders.clear();
        ++acc_.churn.tiles_timed_out;
        break;
      case schedule_action_kind::copy:
        pt.speculated = true;
        ++acc_.churn.speculative_tiles;
        spdlog::debug("speculative copy of step {} gemm {} tile {} (on {}) to device {}", step_,
                      pt.key.gemm, pt.key.tile, pt.holders.front(), a.device);
        send_task(call, pt, a.device, false);
        break;
    }
  }
}

void distributed_gemm::wait_for(inflight_batch& batch, double predicted_seconds) {
  const double start = seconds_now();
  tile_schedule schedule(opts_.schedule, start, predicted_seconds, policy_view(batch), policy(),
                         opts_.schedule_record);
  schedule_ = &schedule;
  auto on_result = [&](tile_result& r) {
    auto [call, pt] = batch.find(step_, r.key);
    // Any answer to a task it was sent, late or refused too, makes room.
    if (opts_.pipelined_devices && pt != nullptr &&
        std::find(pt->given.begin(), pt->given.end(), r.device) != pt->given.end()) {
      window_.answered(r.device);
      send_waiting(r.device);
    }
    if (pt == nullptr || pt->done || pt->arrived) {
      spdlog::debug("dropping late or duplicate result step {} gemm {} tile {} from {}",
                    r.key.step, r.key.gemm, r.key.tile, r.device);
      return;
    }
    if (take(*call, r.key.tile, r, batch))
      schedule.result(seconds_now(), batch.index_of(*call), r.key.tile,
                      r.device);
  };
  // Results still crossing the PS's paced ingress, by when they are through.
  std::multimap<double, tile_result> crossing;
  for (auto& call : batch.calls) compute_unheld(call, batch);
  while (batch.remaining() > 0) {
    double until = schedule.deadline();
    if (!crossing.empty()) until = std::min(until, crossing.begin()->first);
    // The checks' work that needs no result fills the time nothing arrives.
    while (!self_->has_next_message() && seconds_now() < until && prepare_check(batch)) {
    }
    const auto wait = std::chrono::duration_cast<caf::timespan>(
      std::chrono::duration<double>(std::max(0.0, until - seconds_now())));
    self_->receive(
      [&](tile_result& r) {
        if (ingress_.paced()) {
          // The result began crossing the PS's ingress as the device began
          // uploading it (cut through): its uplink's time before now.
          const double now = seconds_now();
          const uint64_t bytes = r.data.size() * result_element_bytes(r.wire);
          double uploading = 0;
          if (fleet_.has(r.device)) {
            const double uplink = fleet_.members().at(r.device).profile.uplink;
            if (uplink > 0) uploading = static_cast<double>(bytes) / uplink;
          }
          const double through = ingress_.pass(now - uploading, bytes);
          if (through > now) {
            crossing.emplace(through, std::move(r));
            return;
          }
        }
        on_result(r);
      },
      [&](tile_miss& m) {
        auto [call, pt] = batch.find(step_, m.key);
        if (pt == nullptr || pt->done || pt->arrived || !fleet_.has(m.device)) return;
        if (std::find(pt->holders.begin(), pt->holders.end(), m.device) == pt->holders.end())
          return;
        sent_.forget(fleet_.members().at(m.device), m.operand_key);  // its cache is not what we thought
        ++acc_.devices[m.device].misses;
        dispatch(*call, *pt, m.device, true);  // the same task again: no more room taken
      },
      [&](event_atom, const fleet_event& ev) { on_event(ev, batch); },
      [&](const caf::down_msg& down) {
        if (down.source == fleet_.planner().address()) on_planner_lost(batch);
      },
      caf::after(wait) >> [] {});
    while (!crossing.empty() && crossing.begin()->first <= seconds_now() && batch.remaining() > 0) {
      auto through = crossing.extract(crossing.begin());
      on_result(through.mapped());
    }
    const double now = seconds_now();
    if (batch.remaining() > 0 && now >= schedule.deadline()) {
      batch_view view = policy_view(batch);
      apply(schedule.on_clock(now, view, policy()), batch);
    }
    for (auto& call : batch.calls) compute_unheld(call, batch);
  }
  schedule_ = nullptr;
  // One recovery per batch: from its first failure until all its products are done.
  double failed_at = std::numeric_limits<double>::infinity();
  for (const auto& call : batch.calls)
    if (call.failed_at >= 0) failed_at = std::min(failed_at, call.failed_at);
  if (failed_at < std::numeric_limits<double>::infinity())
    acc_.churn.recovery_seconds += seconds_now() - failed_at;
}

double distributed_gemm::paced_batch_seconds(const plan& batch) const {
  std::vector<device_view> devices;
  for (const auto& [id, m] : fleet_.members()) {
    device_view v;
    v.id = id;
    v.profile = m.profile;
    devices.push_back(std::move(v));
  }
  planner_config cfg;
  cfg.ps_egress = opts_.paced_egress;
  cfg.ps_ingress = opts_.paced_ingress;
  cfg.ps_links = static_cast<int32_t>(opts_.shards);  // a paced shard has a link of its own
  const auto share = fair_share(devices, cfg, static_cast<int32_t>(opts_.shards));
  return ps_link_seconds(batch, share.devices, share.cfg);
}

bool distributed_gemm::computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) {
  return stays_here(plan_for(tag, m, n, k));
}

const plan& distributed_gemm::plan_for(gemm_tag tag, int64_t m, int64_t n, int64_t k) {
  return plans_.plan_for(self_, fleet_, tag, problem_of(tag, m, n, k));
}

void distributed_gemm::add_local_seconds(double seconds, int64_t products) {
  acc_.totals.ps_compute_seconds += seconds;
  acc_.local_gemms += static_cast<uint64_t>(products);
}

void distributed_gemm::gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b,
                            bool trans_b, mut_view<float> c, float beta) {
  gemm_batch({{tag, a, trans_a, b, trans_b, c, beta}});
}

void distributed_gemm::gemm_batch(const std::vector<gemm_job<float>>& jobs) {
  if (fleet_.stale()) {
    if (auto err = fleet_.refresh())
      spdlog::warn("{}; keeping the fleet as it was", describe(err));
  }
  // Every product's tiles go out before the wait: a layer's dX and dW keep
  // the devices busy through each other's last tiles.
  inflight_batch batch;
  batch.calls.reserve(jobs.size());  // send_task keeps references into the calls
  batch_ = &batch;
  struct batch_scope {  // however the batch ends, nothing waits for it
    distributed_gemm* engine;
    ~batch_scope() {
      engine->batch_ = nullptr;
      engine->window_.clear();
    }
  } scope{this};
  batch_keys keys;
  double predicted = 0;
  plan batch_tiles;  // the batch's tiles in issue order, for a paced link's prediction
  batch_tiles.local = false;
  for (const auto& job : jobs) {
    const auto t_issue = clock_type::now();
    const gemm_problem g =
      problem_of(job.tag, job.c.rows, job.c.cols, job.trans_a ? job.a.rows : job.a.cols);
    const uint32_t seq = gemm_seq_++;
    // Asked even with no device left: a known GEMM keeps its tiles (computed
    // here, in the same order), so its numbers do not change.
    const plan& p = plans_.plan_for(self_, fleet_, job.tag, g);
    if (stays_here(p)) {
      run_local(job.a, job.trans_a, job.b, job.trans_b, job.c, job.beta);
      continue;
    }
    auto& call = batch.calls.emplace_back();
    call.id = gemm_id(seq);
    call.in = inputs{job.a, job.b, job.trans_a, job.trans_b, read_again_this_step(job.tag.role)};
    call.tiles.resize(p.tiles.size());
    call.remaining = p.tiles.size();
    call.c = job.c;
    std::vector<c_block> blocks;
    blocks.reserve(p.tiles.size());
    for (size_t i = 0; i < call.tiles.size(); ++i) {
      const tile& t = p.tiles[i].t;
      call.tiles[i].where = p.tiles[i];
      blocks.push_back({t.m0, t.m1, t.n0, t.n1});
    }
    call.folds.emplace(blocks, job.c.rows, job.c.cols, job.beta);
    call.folds->prepare(job.c);
    call.probes = freivalds::draw_probes(job.c.cols, secret_);
    std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, size_t> group_of;  // by A's block
    for (size_t i = 0; i < call.tiles.size(); ++i) {
      const tile& t = call.tiles[i].where.t;
      auto [g, fresh] = group_of.try_emplace({t.m0, t.m1, t.k0, t.k1}, call.groups.size());
      if (fresh) call.groups.emplace_back();
      call.tiles[i].group = g->second;
      call.groups[g->second].tiles.push_back(i);
      ++call.groups[g->second].open;
    }
    for (size_t i = 0; i < call.tiles.size(); ++i) {
      auto& pt = call.tiles[i];
      const tile& t = pt.where.t;
      pt.key = tile_key{step_, call.id, static_cast<uint32_t>(i)};
      // The plan says which blocks the device holds (W in dX, X in dW): the
      // others are sent, so they are copied in the pass that hashes them.
      pt.a = locate(call, 0, t.m0, t.m1, t.k0, t.k1, keys, !pt.where.a_cached);
      pt.b = locate(call, 1, t.k0, t.k1, t.n0, t.n1, keys, !pt.where.b_cached);
      if (!fleet_.has(pt.where.device)) continue;
      send_task(call, pt, pt.where.device, false);
      // Which tiles are computed twice is the PS's secret too.
      if (opts_.replicate > 0 && replica_draw_(secret_) < opts_.replicate) {
        const int32_t second = policy().take_over(policy_view(call), i);
        if (second < 0) continue;  // no other device can hold it
        pt.copies_wanted = 2;
        send_task(call, pt, second, false);
      }
    }
    acc_.tiles += call.tiles.size();
    predicted += p.predicted_seconds;
    if (egress_.paced()) {
      batch_tiles.tiles.insert(batch_tiles.tiles.end(), p.tiles.begin(), p.tiles.end());
      batch_tiles.bytes_down += p.bytes_down;
      batch_tiles.bytes_up += p.bytes_up;
    }
    acc_.totals.issue_seconds += seconds_since(t_issue);
  }
  if (batch.calls.empty()) return;
  // The products of a batch share a paced link: their tiles queue on it
  // together, where the plans' times each assume the link to themselves.
  if (egress_.paced()) predicted = paced_batch_seconds(batch_tiles);
  acc_.totals.predicted_wait_seconds += predicted;

  const auto t_wait = clock_type::now();
  wait_for(batch, predicted);
  // Results were folded into C as they came: that time is the assembly's.
  double fold_seconds = 0;
  for (const auto& call : batch.calls) fold_seconds += call.fold_seconds;
  acc_.totals.wait_seconds += seconds_since(t_wait) - fold_seconds;
  acc_.totals.allgather_seconds += fold_seconds;
}

}  // namespace cleave
