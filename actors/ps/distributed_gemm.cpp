#include "actors/ps/distributed_gemm.hpp"

#include <chrono>
#include <algorithm>
#include <cstring>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/device/block_cache.hpp"
#include "training/elapsed.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

double seconds_now() {
  return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count();
}

// A plan that leaves the product on the PS: local, or with no tile to send.
bool stays_here(const plan& p) { return p.local || p.tiles.empty(); }

bool all_finite(const std::vector<float>& v) {
  // Exponent bits all set means NaN or infinity. No early exit inside a
  // chunk, so the test vectorises: it runs on every result the PS accepts.
  constexpr size_t chunk = 4096;
  for (size_t i = 0; i < v.size(); i += chunk) {
    const size_t end = std::min(v.size(), i + chunk);
    uint32_t bad = 0;
    for (size_t j = i; j < end; ++j) {
      uint32_t u;
      std::memcpy(&u, &v[j], sizeof(u));
      bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
    }
    if (bad != 0) return false;
  }
  return true;
}

}  // namespace

runtime_accounts combine_shards(const std::vector<runtime_accounts>& shards) {
  runtime_accounts out;
  for (const auto& acc : shards) {
    for (const auto& [id, d] : acc.devices) {
      auto& o = out.devices[id];
      o.profile = d.profile;
      o.tiles += d.tiles;
      o.bytes_down += d.bytes_down;
      o.bytes_up += d.bytes_up;
      o.cache_hits += d.cache_hits;
      o.operands += d.operands;
      o.refused += d.refused;
      o.flops += d.flops;
      o.busy_seconds += d.busy_seconds;
    }
    auto& t = out.totals;
    t.ps_compute_seconds = std::max(t.ps_compute_seconds, acc.totals.ps_compute_seconds);
    t.issue_seconds = std::max(t.issue_seconds, acc.totals.issue_seconds);
    t.wait_seconds = std::max(t.wait_seconds, acc.totals.wait_seconds);
    t.allgather_seconds = std::max(t.allgather_seconds, acc.totals.allgather_seconds);
    t.predicted_wait_seconds = std::max(t.predicted_wait_seconds, acc.totals.predicted_wait_seconds);
    // Shards wait at the same time: the step is the slowest shard's.
    if (acc.prediction.predicted_seconds >= out.prediction.predicted_seconds) {
      out.prediction = acc.prediction;
      out.ps_profile_seconds = acc.ps_profile_seconds;
    }
    out.tiles += acc.tiles;
    out.local_gemms += acc.local_gemms;
    out.refused += acc.refused;
    auto& c = out.churn;
    c.failures_detected = std::max(c.failures_detected, acc.churn.failures_detected);
    c.tiles_reassigned += acc.churn.tiles_reassigned;
    c.speculative_tiles += acc.churn.speculative_tiles;
    c.tiles_timed_out += acc.churn.tiles_timed_out;
    c.tiles_at_ps += acc.churn.tiles_at_ps;
    c.recovery_seconds = std::max(c.recovery_seconds, acc.churn.recovery_seconds);
  }
  return out;
}

distributed_gemm::distributed_gemm(caf::actor_system& sys, caf::actor planner,
                                   engine_options opts, caf::actor gateway)
    : self_(sys), planner_(std::move(planner)), gateway_(std::move(gateway)), opts_(opts) {
  const auto me = caf::actor_cast<caf::actor>(self_);
  self_->monitor(planner_);
  self_->send(planner_, subscribe_atom::value, me);
  if (gateway_) self_->send(gateway_, subscribe_atom::value, me, opts_.shard, opts_.shards);
}

caf::error distributed_gemm::refresh_fleet() {
  for (int attempt = 0;; ++attempt) {
    auto err = ask_fleet();
    if (!err || !opts_.find_planner || attempt == 100) return err;
    // A restarted planner starts with an empty fleet: wait for it and for
    // the devices to join it again; the plans keep their tiles.
    auto next = opts_.find_planner();
    if (next && next != planner_) {
      spdlog::warn("{}; following the restarted planner", describe(err));
      planner_ = next;
      planner_lost_ = false;
      self_->monitor(planner_);
      self_->send(planner_, subscribe_atom::value, caf::actor_cast<caf::actor>(self_));
      fleet_version_ = ~uint64_t{0};
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

caf::error distributed_gemm::ask_fleet() {
  fleet_stale_ = false;
  // The planner answers once its first quorum of devices has joined. One in
  // another process that died answers nothing, so ask in rounds and look for
  // its down message in between.
  for (;;) {
    if (planner_lost_) return fail("the planner is gone");
    caf::error err;
    bool answered = false;
    self_->request(planner_, std::chrono::seconds(1), fleet_atom::value)
      .receive(
        [&](uint64_t version, std::vector<fleet_member>& members) {
          answered = true;
          if (version == fleet_version_) return;
          fleet_version_ = version;
          ++fleet_epoch_;
          fleet_.clear();
          for (auto& m : members) {
            acc_.devices[m.id].profile = m.profile.name;
            fleet_.emplace(m.id, std::move(m));
          }
        },
        [&](caf::error& e) { err = std::move(e); });
    if (answered) return caf::none;
    if (err != caf::make_error(caf::sec::request_timeout))
      return fail("cannot reach the planner: " + self_->system().render(err));
    self_->receive(
      [&](const caf::down_msg& down) {
        if (down.source == planner_.address()) planner_lost_ = true;
      },
      caf::after(std::chrono::seconds(0)) >> [] {});
  }
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
  return out;
}

caf::error distributed_gemm::begin_step(uint64_t step) {
  finish_step();
  in_step_ = true;
  step_began_ = clock_type::now();
  at_step_begin_ = acc_.totals;
  if (!stopped_by_.empty())
    return fail(stopped_by_ + "; --failure-policy=restart stops the run here: resume it from the "
                "last checkpoint with --resume");
  step_ = step;
  gemm_seq_ = 0;
  forward_plans_.clear();
  sent_.clear();
  return refresh_fleet();
}

gemm_problem distributed_gemm::problem_of(gemm_tag tag, int64_t m, int64_t n, int64_t k) const {
  gemm_problem g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.role = tag.role;
  g.sharers = static_cast<int32_t>(opts_.shards);  // the other shards use the fleet meanwhile
  return g;
}

const plan& distributed_gemm::plan_for(gemm_tag tag, const gemm_problem& g) {
  const auto key = std::make_tuple(g.m, g.n, g.k, static_cast<int>(g.role),
                                   tag.role == gemm_role::forward ? 0u : tag.layer);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    plan p;
    p.local = true;
    p.reason = "planner unreachable";
    auto fwd = forward_plans_.find(tag.layer);
    const bool mirror = (g.role == gemm_role::grad_input || g.role == gemm_role::grad_weight)
                        && fwd != forward_plans_.end() && !fwd->second.local;
    bool answered = false;
    auto on_plan = [&](plan& reply) {
      p = std::move(reply);
      answered = true;
    };
    auto on_error = [&](caf::error& e) {
      spdlog::warn("planner did not answer ({}); computing locally", self_->system().render(e));
    };
    if (mirror)
      self_->request(planner_, caf::infinite, mirror_atom::value, fwd->second, g.role, g)
        .receive(on_plan, on_error);
    else
      self_->request(planner_, caf::infinite, plan_atom::value, g).receive(on_plan, on_error);
    spdlog::debug("plan {}x{}x{} role {} layer {}: {}", g.m, g.n, g.k, static_cast<int>(g.role),
                  tag.layer, p.reason);
    if (!answered) {  // asked again next time, not kept for the run
      unplanned_ = std::move(p);
      return unplanned_;
    }
    // The planner may already know of a change this engine has yet to hear.
    const bool current = std::all_of(p.tiles.begin(), p.tiles.end(),
                                     [&](const assignment& a) { return fleet_.count(a.device) > 0; });
    it = plans_.emplace(key, cached_plan{std::move(p), current ? fleet_epoch_ : fleet_epoch_ - 1})
           .first;
  }
  if (it->second.epoch != fleet_epoch_) {
    it->second.p = replaced(it->second.p);
    it->second.epoch = fleet_epoch_;
  }
  if (g.role == gemm_role::forward) forward_plans_[tag.layer] = it->second.p;
  return it->second.p;
}

plan distributed_gemm::replaced(const plan& p) {
  if (p.local) return p;
  std::vector<int32_t> ids;
  for (const auto& [id, m] : fleet_) ids.push_back(id);
  plan out = p;
  self_->request(planner_, caf::infinite, replace_atom::value, p, ids)
    .receive([&](plan& reply) { out = std::move(reply); },
             [&](caf::error& e) {
               spdlog::warn("planner did not re-place a plan ({}); its tiles on lost devices "
                            "are computed here", self_->system().render(e));
             });
  // Whatever is not on a device this engine knows is computed at the PS.
  for (auto& a : out.tiles)
    if (fleet_.count(a.device) == 0) a.device = -1;
  spdlog::debug("{}", out.reason);
  return out;
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

distributed_gemm::block_ref distributed_gemm::locate(gemm_call& call, int which, int64_t r0,
                                                     int64_t r1, int64_t c0, int64_t c1,
                                                     batch_keys& batch, bool will_send) {
  const auto m = call.in.live(which);
  // (r0, r1, c0, c1) are ranges of op(m); the block travels as stored.
  if (call.in.transposed(which)) {
    std::swap(r0, c0);
    std::swap(r1, c1);
  }
  auto [it, fresh] = call.blocks.try_emplace(std::make_tuple(which, r0, r1, c0, c1));
  if (fresh) {
    // Memory no product of the batch writes: the same block of it, read by
    // another product (dY is dX's A and dW's B), has the same key.
    const float* at = m.data + r0 * m.ld + c0;
    const auto where = std::make_tuple(at, r1 - r0, c1 - c0, m.ld);
    auto [known, first] = batch.try_emplace(where);
    if (first) {
      known->second = block_key(
        at, r1 - r0, c1 - c0, m.ld,
        will_send ? call.in.snapshot(which).data() + r0 * m.cols + c0 : nullptr, m.cols);
      it->second.copied = will_send;
    }
    it->second.key = known->second;
  }
  return {which, r0, r1, c0, c1, it->second.key};
}

operand distributed_gemm::cut(gemm_call& call, const block_ref& ref, bool with_data) {
  const auto live = call.in.live(ref.which);
  operand op;
  op.key = ref.key;
  op.rows = ref.r1 - ref.r0;
  op.cols = ref.c1 - ref.c0;
  op.trans = call.in.transposed(ref.which);
  if (!with_data) return op;
  const int64_t ld = live.cols;  // the snapshot is the operand, packed
  auto& state = call.blocks.at(std::make_tuple(ref.which, ref.r0, ref.r1, ref.c0, ref.c1));
  if (!state.copied) {
    float* snap = call.in.snapshot(ref.which).data();
    for (int64_t r = ref.r0; r < ref.r1; ++r)
      std::memcpy(snap + r * ld + ref.c0, live.data + r * live.ld + ref.c0,
                  static_cast<size_t>(op.cols) * sizeof(float));
    state.copied = true;
  }
  op.shared = call.in.shared(ref.which);
  op.offset = ref.r0 * ld + ref.c0;
  op.ld = ld;
  return op;
}

void distributed_gemm::send_task(gemm_call& call, pending_tile& p, int32_t dev,
                                 bool with_all_data) {
  auto& known = sent_[dev];
  auto& acct = acc_.devices[dev];
  tile_task msg;
  msg.key = p.key;
  for (auto [ref, dst] : {std::pair{&p.a, &msg.a}, std::pair{&p.b, &msg.b}}) {
    ++acct.operands;
    const bool send = with_all_data || known.count(ref->key) == 0;
    *dst = cut(call, *ref, send);
    if (send) {
      acct.bytes_down += static_cast<uint64_t>(dst->rows * dst->cols) * sizeof(float);
      known.insert(ref->key);
    }
  }
  if (std::find(p.holders.begin(), p.holders.end(), dev) == p.holders.end())
    p.holders.push_back(dev);
  if (std::find(p.given.begin(), p.given.end(), dev) == p.given.end()) p.given.push_back(dev);
  const auto& member = fleet_.at(dev);
  msg.sent_at_ns = caf::make_timestamp().time_since_epoch().count();
  if (member.bulk && gateway_)
    self_->send(gateway_, task_atom::value, dev, std::move(msg));
  else
    self_->send(member.handle, std::move(msg));
}

bool distributed_gemm::accept(pending_tile& p, tile_result& r) {
  const tile& t = p.where.t;
  const int64_t rows = t.m1 - t.m0;
  const int64_t cols = t.n1 - t.n0;
  const char* problem = nullptr;
  // A device the tile moved away from (suspected, say) may still win.
  if (std::find(p.given.begin(), p.given.end(), r.device) == p.given.end())
    problem = "from a device the tile was not given to";
  else if (r.rows != rows || r.cols != cols || static_cast<int64_t>(r.data.size()) != rows * cols)
    problem = "of the wrong shape";
  else if (!all_finite(r.data))
    problem = "containing NaN or infinity";
  if (problem != nullptr) {
    ++acc_.refused;
    ++acc_.devices[r.device].refused;
    spdlog::warn("refusing result {} for step {} gemm {} tile {} from device {}", problem,
                 r.key.step, r.key.gemm, r.key.tile, r.device);
    return false;
  }
  auto& acct = acc_.devices[r.device];
  ++acct.tiles;
  acct.bytes_up += r.data.size() * sizeof(float);
  acct.cache_hits += r.cache_hits;
  acct.busy_seconds += r.busy_seconds;
  acct.flops += static_cast<double>(t.flops());
  p.result = std::move(r.data);
  p.done = true;
  return true;
}

int32_t distributed_gemm::least_loaded(const gemm_call& call, const pending_tile& p) const {
  // Among usable devices that can hold the tile and are not already on it:
  // the one with the fewest unfinished tiles of this GEMM, then the lowest id.
  std::map<int32_t, size_t> load;
  for (const auto& pt : call.tiles)
    if (!pt.done)
      for (int32_t d : pt.holders) ++load[d];
  const uint64_t need = tile_working_set(p.where.t);
  int32_t best = -1;
  size_t best_load = 0;
  for (const auto& [id, m] : fleet_) {
    if (m.profile.memory_bytes < need) continue;
    if (std::find(p.holders.begin(), p.holders.end(), id) != p.holders.end()) continue;
    const size_t l = load.count(id) != 0 ? load.at(id) : 0;
    if (best < 0 || l < best_load) {
      best = id;
      best_load = l;
    }
  }
  return best;
}

void distributed_gemm::on_planner_lost(std::vector<gemm_call>& calls) {
  if (!opts_.find_planner) return;  // tiles on devices that left it time out
  spdlog::warn("the planner is gone mid-GEMM; waiting for its successor and its fleet");
  planner_lost_ = true;
  const double now = seconds_now();
  for (auto& call : calls)
    if (call.failed_at < 0) call.failed_at = now;
  if (auto err = refresh_fleet()) {
    spdlog::warn("{}; the tiles left are computed here", describe(err));
    fleet_.clear();
  }
  // Devices that left with the planner come back as new members, whose ids
  // may be the old ones: every unfinished tile goes out again (a result of
  // the old holder still counts if it comes first; the rest are dropped).
  sent_.clear();
  for (auto& call : calls)
    for (auto& pt : call.tiles) {
      if (pt.done) continue;
      pt.holders.clear();
      ++acc_.churn.tiles_reassigned;
      reassign(call, pt);
    }
}

void distributed_gemm::reassign(gemm_call& call, pending_tile& p) {
  // The PS itself computes the tile when no device is left that can hold it.
  const int32_t next = least_loaded(call, p);
  p.where.device = next;
  if (next >= 0) send_task(call, p, next, true);
}

void distributed_gemm::on_event(const fleet_event& ev, std::vector<gemm_call>& calls) {
  const int32_t dev = ev.device;
  if (ev.kind == fleet_event_kind::join || ev.kind == fleet_event_kind::rejoin) {
    failed_.erase(dev);
    fleet_stale_ = true;  // usable from the next GEMM
    return;
  }
  if (failed_.insert(dev).second) ++acc_.churn.failures_detected;
  if (opts_.stop_on_failure && ev.kind == fleet_event_kind::dead && stopped_by_.empty())
    stopped_by_ = "device " + std::to_string(dev) + " failed";
  // Dead or suspected: plan around it from now on.
  if (fleet_.erase(dev) == 0) return;
  spdlog::info("device {} is {}; its outstanding tiles go to other devices", dev,
               to_string(ev.kind));
  ++fleet_epoch_;
  for (auto& call : calls)
    for (auto& pt : call.tiles) {
      if (pt.done) continue;
      auto h = std::find(pt.holders.begin(), pt.holders.end(), dev);
      if (h == pt.holders.end()) continue;
      pt.holders.erase(h);
      if (call.failed_at < 0) call.failed_at = seconds_now();
      if (!pt.holders.empty()) continue;  // a copy is still running elsewhere
      ++acc_.churn.tiles_reassigned;
      reassign(call, pt);
    }
}

void distributed_gemm::speculate(gemm_call& call) {
  std::set<int32_t> busy;
  for (const auto& pt : call.tiles)
    if (!pt.done) busy.insert(pt.holders.begin(), pt.holders.end());
  std::vector<int32_t> idle;
  const auto& first_undone = *std::find_if(call.tiles.begin(), call.tiles.end(),
                                           [](const pending_tile& pt) { return !pt.done; });
  for (const auto& [id, m] : fleet_)
    if (busy.count(id) == 0 && m.profile.memory_bytes >= tile_working_set(first_undone.where.t))
      idle.push_back(id);
  auto next_idle = idle.begin();
  for (auto& pt : call.tiles) {
    if (next_idle == idle.end()) break;
    if (pt.done || pt.speculated || pt.holders.empty()) continue;
    if (fleet_.at(*next_idle).profile.memory_bytes < tile_working_set(pt.where.t)) continue;
    pt.speculated = true;
    ++acc_.churn.speculative_tiles;
    spdlog::debug("speculative copy of step {} gemm {} tile {} (on {}) to device {}", step_,
                  pt.key.gemm, pt.key.tile, pt.holders.front(), *next_idle);
    send_task(call, pt, *next_idle++, false);
  }
}

void distributed_gemm::compute_unheld(gemm_call& call) {
  // Tiles no device holds (none could take them, or they timed out) are
  // computed here, on one thread like a device: Eigen's thread count is
  // process-wide and changes its blocking (so the rounding) of the devices
  // computing the GEMM's other tiles right now.
  const auto& in = call.in;
  const auto t0 = clock_type::now();
  std::vector<size_t> computed;
  for (size_t i = 0; i < call.tiles.size(); ++i) {
    auto& pt = call.tiles[i];
    if (pt.done || !pt.holders.empty()) continue;
    const tile& t = pt.where.t;
    pt.result.assign(static_cast<size_t>((t.m1 - t.m0) * (t.n1 - t.n0)), 0.0f);
    const auto& ra = pt.a;
    const auto& rb = pt.b;
    gemm_local<float>({in.a.data + ra.r0 * in.a.ld + ra.c0, ra.r1 - ra.r0, ra.c1 - ra.c0, in.a.ld},
                      in.trans_a,
                      {in.b.data + rb.r0 * in.b.ld + rb.c0, rb.r1 - rb.r0, rb.c1 - rb.c0, in.b.ld},
                      in.trans_b, {pt.result.data(), t.m1 - t.m0, t.n1 - t.n0, t.n1 - t.n0}, 0.0f);
    pt.done = true;
    --call.remaining;
    ++acc_.churn.tiles_at_ps;
    computed.push_back(i);
  }
  acc_.totals.ps_compute_seconds += seconds_since(t0);
  for (size_t i : computed) fold_ready(call, i);
}

void distributed_gemm::order_folds(gemm_call& call, float beta) {
  // Results are added into C as they arrive, while the devices still work,
  // but each block of C takes its K partials in tile order, so the sums are
  // the same every run. That needs the tiles' blocks of C to be equal or
  // disjoint, a grid as the planner cuts, and to cover C; otherwise every
  // tile waits for the one before it.
  auto& tiles = call.tiles;
  auto disjoint = [&](bool rows) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const auto& pt : tiles)
      ranges.emplace_back(rows ? pt.where.t.m0 : pt.where.t.n0, rows ? pt.where.t.m1 : pt.where.t.n1);
    std::sort(ranges.begin(), ranges.end());
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second) return false;
    return true;
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int32_t> last;
  int64_t covered = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const tile& t = tiles[i].where.t;
    auto [it, first] = last.try_emplace({t.m0, t.m1, t.n0, t.n1}, static_cast<int32_t>(i));
    if (first) {
      covered += (t.m1 - t.m0) * (t.n1 - t.n0);
    } else {
      tiles[i].after = it->second;
      tiles[static_cast<size_t>(it->second)].then = static_cast<int32_t>(i);
      it->second = static_cast<int32_t>(i);
    }
    tiles[i].copies = first && beta == 0.0f;
  }
  const bool grid = disjoint(true) && disjoint(false) && covered == call.c.rows * call.c.cols;
  if (!grid) {
    for (size_t i = 0; i < tiles.size(); ++i) {
      tiles[i].after = static_cast<int32_t>(i) - 1;
      tiles[i].then = i + 1 < tiles.size() ? static_cast<int32_t>(i + 1) : -1;
      tiles[i].copies = false;
    }
  }
  auto cm = call.c.map();
  if (beta == 0.0f && !grid)
    cm.setZero();
  else if (beta != 0.0f && beta != 1.0f)
    cm *= beta;
}

void distributed_gemm::fold_ready(gemm_call& call, size_t i) {
  const auto t0 = clock_type::now();
  const mut_view<float> c = call.c;
  for (auto j = static_cast<int32_t>(i); j >= 0; j = call.tiles[static_cast<size_t>(j)].then) {
    auto& pt = call.tiles[static_cast<size_t>(j)];
    if (!pt.done || pt.folded || (pt.after >= 0 && !call.tiles[static_cast<size_t>(pt.after)].folded))
      break;
    const tile& t = pt.where.t;
    const int64_t rows = t.m1 - t.m0;
    const int64_t cols = t.n1 - t.n0;
    for (int64_t r = 0; r < rows; ++r) {
      float* dst = c.data + (t.m0 + r) * c.ld + t.n0;
      const float* src = pt.result.data() + r * cols;
      if (pt.copies)
        std::memcpy(dst, src, static_cast<size_t>(cols) * sizeof(float));
      else
        for (int64_t x = 0; x < cols; ++x) dst[x] += src[x];
    }
    pt.folded = true;
    std::vector<float>().swap(pt.result);
  }
  call.fold_seconds += seconds_since(t0);
}

void distributed_gemm::wait_for(std::vector<gemm_call>& calls, double predicted_seconds) {
  const double start = seconds_now();
  const double speculate_at =
    opts_.speculate_factor > 0
      ? start + std::max(opts_.speculate_factor * predicted_seconds, opts_.speculate_min_seconds)
      : std::numeric_limits<double>::infinity();
  double last_progress = start;
  bool speculated = false;
  // The call and tile a result or miss is about, if it is in flight.
  auto find = [&](const tile_key& k) -> std::pair<gemm_call*, pending_tile*> {
    if (k.step == step_)
      for (auto& call : calls)
        if (k.gemm == call.id && k.tile < call.tiles.size()) return {&call, &call.tiles[k.tile]};
    return {nullptr, nullptr};
  };
  auto remaining = [&] {
    size_t n = 0;
    for (const auto& call : calls) n += call.remaining;
    return n;
  };
  for (auto& call : calls) compute_unheld(call);
  while (remaining() > 0) {
    const double deadline = std::min(last_progress + opts_.tile_timeout_seconds,
                                      speculated ? std::numeric_limits<double>::infinity()
                                                 : speculate_at);
    const auto wait = std::chrono::duration_cast<caf::timespan>(
      std::chrono::duration<double>(std::max(0.0, deadline - seconds_now())));
    self_->receive(
      [&](tile_result& r) {
        auto [call, pt] = find(r.key);
        if (pt == nullptr || pt->done) {
          spdlog::debug("dropping late or duplicate result step {} gemm {} tile {} from {}",
                        r.key.step, r.key.gemm, r.key.tile, r.device);
          return;
        }
        const int32_t from = r.device;
        if (accept(*pt, r)) {
          --call->remaining;
          last_progress = seconds_now();
          fold_ready(*call, r.key.tile);
          return;
        }
        auto h = std::find(pt->holders.begin(), pt->holders.end(), from);
        if (h == pt->holders.end()) return;
        pt->holders.erase(h);
        if (pt->holders.empty()) reassign(*call, *pt);
      },
      [&](tile_miss& m) {
        auto [call, pt] = find(m.key);
        if (pt == nullptr || pt->done || fleet_.count(m.device) == 0) return;
        if (std::find(pt->holders.begin(), pt->holders.end(), m.device) == pt->holders.end())
          return;
        sent_[m.device].clear();  // its cache is not what we thought
        send_task(*call, *pt, m.device, true);
      },
      [&](event_atom, const fleet_event& ev) { on_event(ev, calls); },
      [&](const caf::down_msg& down) {
        if (down.source == planner_.address()) on_planner_lost(calls);
      },
      caf::after(wait) >> [] {});
    const double now = seconds_now();
    if (now >= last_progress + opts_.tile_timeout_seconds) {
      for (auto& call : calls)
        for (auto& pt : call.tiles)
          if (!pt.done && !pt.holders.empty()) {
            spdlog::warn("tile step {} gemm {} tile {} timed out on device {}; computing it here",
                         step_, pt.key.gemm, pt.key.tile, pt.holders.front());
            pt.holders.clear();
            ++acc_.churn.tiles_timed_out;
          }
      last_progress = now;
    } else if (!speculated && now >= speculate_at && remaining() > 0) {
      speculated = true;
      for (auto& call : calls)
        if (call.remaining > 0) speculate(call);
    }
    for (auto& call : calls) compute_unheld(call);
  }
  // One recovery per batch: from its first failure until all its products are done.
  double failed_at = std::numeric_limits<double>::infinity();
  for (const auto& call : calls)
    if (call.failed_at >= 0) failed_at = std::min(failed_at, call.failed_at);
  if (failed_at < std::numeric_limits<double>::infinity())
    acc_.churn.recovery_seconds += seconds_now() - failed_at;
}

bool distributed_gemm::computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) {
  return stays_here(plan_for(tag, problem_of(tag, m, n, k)));
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
  if (fleet_stale_) {
    if (auto err = refresh_fleet())
      spdlog::warn("{}; keeping the fleet as it was", describe(err));
  }
  // Every product's tiles go out before the wait: a layer's dX and dW keep
  // the devices busy through each other's last tiles.
  std::vector<gemm_call> calls;
  calls.reserve(jobs.size());  // send_task keeps references into calls
  batch_keys keys;
  double predicted = 0;
  for (const auto& job : jobs) {
    const auto t_issue = clock_type::now();
    const gemm_problem g =
      problem_of(job.tag, job.c.rows, job.c.cols, job.trans_a ? job.a.rows : job.a.cols);
    const uint32_t seq = gemm_seq_++;
    // Asked even with no device left: a known GEMM keeps its tiles (computed
    // here, in the same order), so its numbers do not change.
    const plan& p = plan_for(job.tag, g);
    if (stays_here(p)) {
      run_local(job.a, job.trans_a, job.b, job.trans_b, job.c, job.beta);
      continue;
    }
    auto& call = calls.emplace_back();
    call.id = gemm_id(seq);
    call.in = inputs{job.a, job.b, job.trans_a, job.trans_b,
                     snapshots_.acquire(static_cast<size_t>(job.a.rows * job.a.cols)),
                     snapshots_.acquire(static_cast<size_t>(job.b.rows * job.b.cols))};
    call.tiles.resize(p.tiles.size());
    call.remaining = p.tiles.size();
    call.c = job.c;
    for (size_t i = 0; i < call.tiles.size(); ++i) call.tiles[i].where = p.tiles[i];
    order_folds(call, job.beta);
    for (size_t i = 0; i < call.tiles.size(); ++i) {
      auto& pt = call.tiles[i];
      const tile& t = pt.where.t;
      pt.key = tile_key{step_, call.id, static_cast<uint32_t>(i)};
      // The plan says which blocks the device holds (W in dX, X in dW): the
      // others are sent, so they are copied in the pass that hashes them.
      pt.a = locate(call, 0, t.m0, t.m1, t.k0, t.k1, keys, !pt.where.a_cached);
      pt.b = locate(call, 1, t.k0, t.k1, t.n0, t.n1, keys, !pt.where.b_cached);
      if (fleet_.count(pt.where.device) != 0) send_task(call, pt, pt.where.device, false);
    }
    acc_.tiles += call.tiles.size();
    acc_.totals.predicted_wait_seconds += p.predicted_seconds;
    predicted += p.predicted_seconds;
    acc_.totals.issue_seconds += seconds_since(t_issue);
  }
  if (calls.empty()) return;

  const auto t_wait = clock_type::now();
  wait_for(calls, predicted);
  // Results were folded into C as they came: that time is the assembly's.
  double fold_seconds = 0;
  for (const auto& call : calls) fold_seconds += call.fold_seconds;
  acc_.totals.wait_seconds += seconds_since(t_wait) - fold_seconds;
  acc_.totals.allgather_seconds += fold_seconds;
}

}  // namespace cleave
