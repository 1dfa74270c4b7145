#include "actors/simulator/batch_sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "actors/planner/cost_model.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

}  // namespace

batch_sim::batch_sim(std::vector<shard_links> shards, schedule_options schedule, double ps_flops,
                     double detection_seconds, ps_link_model egress_model, bool pipelined,
                     std::vector<relay_profile> relays, ps_op_rates ps_ops, bool rounded)
    : links_cfg_(std::move(shards)), relays_(std::move(relays), static_cast<uint32_t>(links_cfg_.size())),
      schedule_(schedule), ps_flops_(ps_flops),
      detection_seconds_(detection_seconds), egress_model_(egress_model), pipelined_(pipelined),
      shards_(static_cast<uint32_t>(links_cfg_.size())), ps_ops_(ps_ops), rounded_(rounded) {
  clock_version_.assign(shards_, 0);
  ps_free_at_.assign(shards_, 0);
  work_.assign(shards_, plan_ps_work{});
  prepare_left_.assign(shards_, 0);
  failed_at_.assign(shards_, -1);
}

void batch_sim::size_for(size_t devices) {
  if (devices <= devices_ && !links_.empty()) return;
  devices_ = std::max(devices, devices_);
  links_.clear();
  link_flows_.clear();
  const size_t slots = devices_ * shards_;
  const size_t ps_flows = devices_ + relays_.size();
  for (const auto& l : links_cfg_) {
    links_.emplace_back(egress_model_, l.egress, ps_flows);
    links_.emplace_back(ps_link_model::fair, l.ingress, ps_flows);
    link_flows_.insert(link_flows_.end(), 2, static_cast<uint32_t>(ps_flows));
  }
  for (uint32_t r = 0; r < relays_.size(); ++r)
    for (int up = 0; up < 2; ++up) {
      links_.emplace_back(ps_link_model::fair, relays_.profile(r).fanout, slots);
      link_flows_.push_back(static_cast<uint32_t>(slots));
    }
  link_version_.assign(links_.size(), 0);
  pipes_.assign(slots, pipeline{});
  epoch_.assign(slots, 0);
  held_bytes_.assign(devices_, 0);
  busy_since_.assign(devices_, 0);
}

void batch_sim::push(double at, ev_kind kind, uint32_t slot, uint32_t arg) {
  const bool per_slot = kind == ev_kind::arrived || kind == ev_kind::computed || kind == ev_kind::result;
  events_.push_back({at, seq_++, kind, slot, arg, per_slot ? epoch_[slot] : 0u});
  std::push_heap(events_.begin(), events_.end(), std::greater<>{});
}

double batch_sim::rate(int32_t device, double declared) const {
  return declared / (static_cast<double>(shards_) * fleet_->devices()[static_cast<size_t>(device)].slowdown);
}

void batch_sim::append(queue& q, uint32_t e) {
  entries_[e].next = none;
  if (q.tail == none) q.head = e;
  else entries_[q.tail].next = e;
  q.tail = e;
}

uint32_t batch_sim::take(queue& q) {
  const uint32_t e = q.head;
  q.head = entries_[e].next;
  if (q.head == none) q.tail = none;
  return e;
}

void batch_sim::enqueue(double now, uint32_t shard, int32_t device, uint32_t tile,
                        issued_tile sent) {
  const uint32_t slot = shard * static_cast<uint32_t>(devices_) + static_cast<uint32_t>(device);
  const uint32_t e = static_cast<uint32_t>(entries_.size());
  entries_.push_back({tile, none, sent, slot, epoch_[slot]});
  append(pipes_[slot].pending, e);
  if (fleet_->devices()[static_cast<size_t>(device)].alive) fetch(now, slot);
}

void batch_sim::hold(double now, uint32_t dev, int64_t bytes) {
  auto& d = fleet_->devices()[dev];
  if (held_bytes_[dev] == 0) busy_since_[dev] = now;
  held_bytes_[dev] = static_cast<uint64_t>(static_cast<int64_t>(held_bytes_[dev]) + bytes);
  if (held_bytes_[dev] == 0) d.busy_seconds += now - busy_since_[dev];
  d.peak_bytes = std::max(d.peak_bytes, held_bytes_[dev]);
}

void batch_sim::fetch(double now, uint32_t slot) {
  auto& pipe = pipes_[slot];
  const uint32_t dev = device_of(slot);
  const auto& d = fleet_->devices()[dev];
  while (pipe.downloading == none && !pipe.pending.empty()) {
    const uint64_t ws = tile_memory(plan_of_entry(slot, pipe.pending.head), tile_of(slot, pipe.pending.head));
    const uint32_t depth = pipelined_ ? device_pipeline_depth(d.profile.memory_bytes, shards_, ws) : 1;
    if (pipe.in_hand >= depth) return;
    const uint32_t e = take(pipe.pending);
    ++pipe.in_hand;
    hold(now, dev, static_cast<int64_t>(ws));
    const uint64_t bytes = entries_[e].sent.bytes;
    const uint32_t shard = shard_of(slot);
    fleet_->devices()[dev].bytes_down += bytes;
    if (bytes == 0) {  // every block cached: the task alone crosses
      push(now + d.profile.latency, ev_kind::arrived, slot, e);
      continue;
    }
    pipe.downloading = e;
    if (d.relay >= 0) {
      relay_block blocks[2];
      const auto r = static_cast<uint32_t>(d.relay);
      if (relays_.need(r, shard, e, blocks, relay_blocks(e, blocks), entries_[e].tile) == 0)
        from_relay(now, e);
      kick_fetch(now, r, shard);
      continue;
    }
    totals_->shard_bytes_down[shard] += bytes;
    links_[2 * shard].start(now, dev, static_cast<double>(bytes),
                            rate(static_cast<int32_t>(dev), d.profile.downlink), entries_[e].tile);
    wake_link(2 * shard);
  }
}

size_t batch_sim::relay_blocks(uint32_t e, relay_block out[2]) {
  const entry& en = entries_[e];
  const uint32_t shard = shard_of(en.slot);
  const tile_at at = locate(shard, en.tile);
  const plan& p = *calls_[shard].plans[at.call];
  if (p.op != tile_op::gemm) {  // attention: its operands are its own
    out[0] = {(uint64_t{1} << 63) | (runs_ << 32) | e, en.sent.bytes};
    return 1;
  }
  tile_block blocks[2];
  tile_blocks(p.tiles[at.index].t, *calls_[shard].ops[at.call], blocks);
  size_t n = 0;
  for (int b = 0; b < 2; ++b)
    if (en.sent.blocks & (1u << b)) out[n++] = {blocks[b].key, blocks[b].bytes};
  return n;
}

void batch_sim::from_relay(double now, uint32_t e) {
  const uint32_t slot = entries_[e].slot, dev = device_of(slot);
  const auto r = static_cast<uint32_t>(relay_of(dev));
  const uint64_t bytes = entries_[e].sent.bytes;
  relays_.served(r, bytes);
  const uint32_t link = relay_link(r, false);
  links_[link].start(now, slot, static_cast<double>(bytes),
                     rate(static_cast<int32_t>(dev), fleet_->devices()[dev].profile.downlink));
  wake_link(link);
}

void batch_sim::kick_fetch(double now, uint32_t relay, uint32_t shard) {
  relay_block b;
  uint64_t priority = 0;
  if (!relays_.next_fetch(relay, shard, b, priority)) return;
  totals_->shard_bytes_down[shard] += b.bytes;
  links_[2 * shard].start(now, static_cast<uint32_t>(devices_) + relay, static_cast<double>(b.bytes),
                          relays_.profile(relay).downlink / static_cast<double>(shards_), priority);
  wake_link(2 * shard);
}

void batch_sim::kick_upload(double now, uint32_t relay, uint32_t shard) {
  relay_tier::result res;
  if (!relays_.next_upload(relay, shard, res)) return;
  links_[2 * shard + 1].start(now, static_cast<uint32_t>(devices_) + relay,
                              static_cast<double>(res.bytes),
                              relays_.profile(relay).uplink / static_cast<double>(shards_));
  wake_link(2 * shard + 1);
}

void batch_sim::on_stored(double now, uint32_t lane) {
  const uint32_t r = lane / shards_, shard = lane % shards_;
  ready_.clear();
  relays_.landed(r, shard, ready_);
  for (uint32_t e : ready_) {
    const entry& en = entries_[e];
    if (en.epoch != epoch_[en.slot]) continue;  // its device died meanwhile
    relay_block blocks[2];
    if (relays_.need(r, shard, e, blocks, relay_blocks(e, blocks), en.tile) == 0) from_relay(now, e);
  }
  kick_fetch(now, r, shard);
}

void batch_sim::compute(double now, uint32_t slot) {
  auto& pipe = pipes_[slot];
  if (pipe.computing != none || pipe.to_compute.empty()) return;
  const uint32_t e = take(pipe.to_compute);
  pipe.computing = e;
  const uint32_t dev = device_of(slot);
  const double flops = tile_flops(plan_of_entry(slot, e), tile_of(slot, e));
  push(now + flops / rate(static_cast<int32_t>(dev), fleet_->devices()[dev].profile.flops),
       ev_kind::computed, slot, e);
}

void batch_sim::upload(double now, uint32_t slot) {
  auto& pipe = pipes_[slot];
  if (pipe.uploading != none || pipe.to_upload.empty()) return;
  const uint32_t e = take(pipe.to_upload);
  pipe.uploading = e;
  const uint32_t shard = shard_of(slot), dev = device_of(slot);
  auto& d = fleet_->devices()[dev];
  const uint64_t up = tile_up_bytes(plan_of_entry(slot, e), tile_of(slot, e));
  d.bytes_up += up;
  totals_->shard_bytes_up[shard] += up;
  const uint32_t link = d.relay >= 0 ? relay_link(static_cast<uint32_t>(d.relay), true) : 2 * shard + 1;
  links_[link].start(now, d.relay >= 0 ? slot : dev, static_cast<double>(up),
                     rate(static_cast<int32_t>(dev), d.profile.uplink));
  wake_link(link);
}

void batch_sim::wake_link(uint32_t link) {
  const uint32_t version = ++link_version_[link];
  const double at = links_[link].next_finish();
  if (at < infinity) push(at, ev_kind::link, link, version);
}

void batch_sim::push_clock(uint32_t shard) {
  const uint32_t version = ++clock_version_[shard];
  const double at = flights_[shard].deadline();
  if (flights_[shard].remaining() > 0 && at < infinity) push(at, ev_kind::clock, shard, version);
}

void batch_sim::compute_here(double now, uint32_t shard, uint32_t tile) {
  ++totals_->tiles_at_ps;
  at_ps_[shard][tile] = true;
  const double seconds = tile_flops(plan_of(shard, tile), placed(shard, tile).t) / ps_flops_;
  ps_free_at_[shard] = ps_begin(shard, now) + seconds;
  totals_->ps_tile_seconds += seconds;
  push(ps_free_at_[shard], ev_kind::ps_done, shard, tile);
}

double batch_sim::ps_begin(uint32_t shard, double now) {
  const double idle = now - ps_free_at_[shard];
  if (idle > 0) prepare_left_[shard] -= std::min(prepare_left_[shard], idle);
  return std::max(now, ps_free_at_[shard]);
}

void batch_sim::on_sent(double now, uint32_t shard, uint32_t tile) {
  // Moved or computed here while the PS got it ready: its task goes where
  // the schedule sent it then, or nowhere.
  const int32_t dev = placed(shard, tile).device;
  const tile_at at = locate(shard, tile);
  const auto& holders = flights_[shard].tiles()[at.call][at.index].holders;
  if (at_ps_[shard][tile] || holders.empty() || holders.front() != dev) return;
  enqueue(now, shard, dev, tile, (*issued_)[shard][tile]);
}

void batch_sim::apply(double now, uint32_t shard, const std::vector<schedule_action>& actions) {
  for (const auto& a : actions) {
    const auto tile = calls_[shard].first[a.call] + static_cast<uint32_t>(a.tile);
    switch (a.kind) {
      case schedule_action_kind::drop:
        if (failed_at_[shard] < 0) failed_at_[shard] = now;
        break;
      case schedule_action_kind::send:
        ++totals_->tiles_reassigned;
        enqueue(now, shard, a.device, tile, resend(shard, a.device, tile));
        break;
      case schedule_action_kind::here:
        ++totals_->tiles_reassigned;
        compute_here(now, shard, tile);
        break;
      case schedule_action_kind::timed_out:
        ++totals_->tiles_timed_out;
        compute_here(now, shard, tile);
        break;
      case schedule_action_kind::copy:
        ++totals_->speculative_tiles;
        enqueue(now, shard, a.device, tile, resend(shard, a.device, tile));
        break;
    }
  }
}

void batch_sim::release(double now, uint32_t slot, uint32_t e) {
  --pipes_[slot].in_hand;
  hold(now, device_of(slot), -static_cast<int64_t>(tile_memory(plan_of_entry(slot, e), tile_of(slot, e))));
  fetch(now, slot);
}

void batch_sim::on_result(double now, uint32_t slot, uint32_t e) {
  const uint32_t shard = shard_of(slot);
  const uint32_t which = entries_[e].tile;
  if (!pipelined_) release(now, slot, e);  // an emulated device takes its next tile now
  const auto& taking = work_[shard].result;
  if (!taking.empty() && !at_ps_[shard][which]) {
    ps_free_at_[shard] = ps_begin(shard, now) + taking[which];
    totals_->ps_op_seconds += taking[which];
    push(ps_free_at_[shard], ev_kind::taken, slot, e);
    return;
  }
  on_taken(now, slot, e);
}

void batch_sim::on_taken(double now, uint32_t slot, uint32_t e) {
  const uint32_t shard = shard_of(slot), dev = device_of(slot);
  auto& d = fleet_->devices()[dev];
  const uint32_t which = entries_[e].tile;
  const tile_at at = locate(shard, which);
  if (!at_ps_[shard][which] && flights_[shard].result(now, at.call, at.index, static_cast<int32_t>(dev))) {
    ++d.tiles;
    d.flops += tile_flops(plan_of(shard, which), placed(shard, which).t);
    push_clock(shard);
  }
}

void batch_sim::on_link(double now, uint32_t link) {
  finished_.clear();
  links_[link].finish_due(now, finished_);
  const bool to_relay = link >= 2 * shards_;
  const uint32_t shard = link / 2;
  for (uint32_t flow : finished_) {
    if (!to_relay && flow >= devices_) {  // a relay's fetch or upload
      const uint32_t r = flow - static_cast<uint32_t>(devices_);
      const double latency = relays_.profile(r).latency;
      if (link % 2 == 0) {
        relays_.fetched(r, shard);
        push(now + latency, ev_kind::stored, r * shards_ + shard, 0);
        kick_fetch(now, r, shard);
      } else {
        const auto res = relays_.uploaded(r, shard);
        push(now + latency + fleet_->devices()[device_of(res.slot)].profile.latency, ev_kind::result,
             res.slot, res.entry);
        kick_upload(now, r, shard);
      }
      continue;
    }
    const uint32_t slot = to_relay ? flow : shard * static_cast<uint32_t>(devices_) + flow;
    const uint32_t dev = device_of(slot);
    auto& pipe = pipes_[slot];
    const double latency = fleet_->devices()[dev].profile.latency;
    if (link % 2 == 0) {  // operands in: they reach the device a latency later
      push(now + latency, ev_kind::arrived, slot, pipe.downloading);
      pipe.downloading = none;
      fetch(now, slot);
    } else {  // result out: it reaches the PS a latency later, or its relay
      const uint32_t e = pipe.uploading;
      if (to_relay) {
        const uint32_t r = (link - 2 * shards_) / 2, s = shard_of(slot);
        relays_.arrived(r, s, {slot, e, tile_up_bytes(plan_of_entry(slot, e), tile_of(slot, e))});
        kick_upload(now, r, s);
      } else {
        push(now + latency, ev_kind::result, slot, e);
      }
      pipe.uploading = none;
      upload(now, slot);
      if (pipelined_) release(now, slot, e);  // a device process drops the tile once it is sent
    }
  }
  wake_link(link);
}

void batch_sim::on_churn(double now, const timed_churn& ev) {
  const bool dies = !ev.seen && ev.device >= 0
                    && static_cast<size_t>(ev.device) < fleet_->size()
                    && fleet_->devices()[static_cast<size_t>(ev.device)].alive
                    && ev.action != churn_action::slow && ev.action != churn_action::join;
  const bool left = fleet_->apply(ev, detection_seconds_, feed_->queue());
  if (dies && static_cast<size_t>(ev.device) < devices_) {
    // Its work in flight is lost: transfers stop, pending phases never come.
    const auto dev = static_cast<uint32_t>(ev.device);
    for (uint32_t s = 0; s < shards_; ++s) {
      const uint32_t slot = s * static_cast<uint32_t>(devices_) + dev;
      ++epoch_[slot];
      pipes_[slot] = pipeline{};
      for (uint32_t link : {2 * s, 2 * s + 1})
        if (links_[link].running(dev)) {
          links_[link].cancel(now, dev);
          wake_link(link);
        }
      if (const int32_t r = fleet_->devices()[dev].relay; r >= 0)
        for (bool up : {false, true}) {
          const uint32_t link = relay_link(static_cast<uint32_t>(r), up);
          if (links_[link].running(slot)) {
            links_[link].cancel(now, slot);
            wake_link(link);
          }
        }
    }
    if (held_bytes_[dev] > 0) fleet_->devices()[dev].busy_seconds += now - busy_since_[dev];
    held_bytes_[dev] = 0;
    caches_.forget(ev.device);
  }
  if (!left) return;
  for (uint32_t s = 0; s < shards_; ++s) {
    if (flights_[s].remaining() == 0) continue;
    apply(now, s, flights_[s].lost(now, ev.device));
    push_clock(s);
  }
}

batch_sim::shard_calls batch_sim::calls_of(const gemm_batch_sim& batch, size_t shard) {
  shard_calls out;
  uint32_t tiles = 0;
  for (const auto& product : batch) {
    const plan& p = *product.shard_plans[shard];
    out.plans.push_back(&p);
    out.ops.push_back(&product.ops[shard]);
    out.first.push_back(tiles);
    if (!p.local) tiles += static_cast<uint32_t>(p.tiles.size());
  }
  out.first.push_back(tiles);
  return out;
}

batch_sim::tile_at batch_sim::locate(uint32_t shard, uint32_t tile) const {
  const auto& first = calls_[shard].first;
  uint32_t call = 0;
  while (first[call + 1] <= tile) ++call;  // a batch holds one or two products
  return {call, tile - first[call]};
}

caf::expected<double> batch_sim::run(double now, const gemm_batch_sim& batch, const issued_bytes& issued,
                                     sim_fleet& fleet, churn_feed& feed, batch_totals& totals) {
  fleet_ = &fleet;
  resent_ = false;
  feed_ = &feed;
  totals_ = &totals;
  issued_ = &issued;
  calls_.clear();
  for (uint32_t s = 0; s < shards_; ++s) calls_.push_back(calls_of(batch, s));
  size_for(fleet.size());
  totals.shard_bytes_down.resize(shards_, 0);
  totals.shard_bytes_up.resize(shards_, 0);
  flights_.clear();
  at_ps_.resize(shards_);
  std::vector<policy_device> members;
  for (size_t i = 0; i < fleet.size(); ++i)
    if (fleet.devices()[i].member)
      members.push_back({static_cast<int32_t>(i), fleet.devices()[i].profile.memory_bytes});
  for (uint32_t s = 0; s < shards_; ++s) {
    failed_at_[s] = -1;
    ps_free_at_[s] = now;
    const shard_calls& calls = calls_[s];
    work_[s] = plan_ps_work{};
    // The engine's wait is the sum of its products' predictions (gemm_batch).
    double predicted = 0;
    batch_view view(calls.plans.size());
    for (size_t c = 0; c < calls.plans.size(); ++c) {
      const plan& p = *calls.plans[c];
      if (p.local) continue;
      predicted += p.predicted_seconds;
      if (!ps_ops_.is_none()) {
        const plan_ps_work w = ps_plan_work(p, ps_ops_, rounded_);
        work_[s].issue.insert(work_[s].issue.end(), w.issue.begin(), w.issue.end());
        work_[s].result.insert(work_[s].result.end(), w.result.begin(), w.result.end());
        work_[s].prepare += w.prepare;
      }
      view[c].resize(p.tiles.size());
      for (size_t i = 0; i < p.tiles.size(); ++i) {
        view[c][i].working_set = tile_memory(p, p.tiles[i].t);
        const int32_t dev = p.tiles[i].device;
        if (dev >= 0 && static_cast<size_t>(dev) < fleet.size()
            && fleet.devices()[static_cast<size_t>(dev)].member)
          view[c][i].holders.push_back(dev);
      }
    }
    prepare_left_[s] = work_[s].prepare;
    totals.ps_op_seconds += work_[s].prepare;
    at_ps_[s].assign(calls.first.back(), false);
    flights_.emplace_back(schedule_, now, predicted, view, members);
  }
  for (uint32_t s = 0; s < shards_; ++s) {
    const shard_calls& calls = calls_[s];
    totals.tiles += calls.first.back();
    for (uint32_t u = 0; u < calls.first.back(); ++u) {
      const tile_at at = locate(s, u);
      const auto& holders = flights_[s].tiles()[at.call][at.index].holders;
      if (holders.empty()) {
        compute_here(now, s, u);
      } else if (work_[s].issue.empty()) {
        enqueue(now, s, holders.front(), u, issued[s][u]);
      } else {  // the task leaves once the PS has its blocks ready
        ps_free_at_[s] += work_[s].issue[u];
        totals.ps_op_seconds += work_[s].issue[u];
        push(ps_free_at_[s], ev_kind::sent, s, u);
      }
    }
    push_clock(s);
  }
  auto remaining = [&] {
    size_t n = 0;
    for (const auto& f : flights_) n += f.remaining();
    return n;
  };
  while (remaining() > 0) {
    const double next_event = events_.empty() ? infinity : events_.front().at;
    if (feed.next_time() < next_event) {
      const timed_churn ev = feed.pop(fleet);
      now = std::max(now, ev.at);
      on_churn(now, ev);
      continue;
    }
    if (events_.empty())
      return fail("simulate: a GEMM stalled with " + std::to_string(remaining())
                  + " tiles left and nothing to wait for");
    std::pop_heap(events_.begin(), events_.end(), std::greater<>{});
    const event ev = events_.back();
    events_.pop_back();
    now = ev.at;
    switch (ev.kind) {
      case ev_kind::arrived:
        if (ev.epoch == epoch_[ev.slot]) {
          append(pipes_[ev.slot].to_compute, ev.arg);
          compute(now, ev.slot);
        }
        break;
      case ev_kind::computed:
        if (ev.epoch == epoch_[ev.slot]) {
          pipes_[ev.slot].computing = none;
          append(pipes_[ev.slot].to_upload, ev.arg);
          upload(now, ev.slot);
          compute(now, ev.slot);
        }
        break;
      case ev_kind::result:
        if (ev.epoch == epoch_[ev.slot]) on_result(now, ev.slot, ev.arg);
        break;
      case ev_kind::link:
        if (ev.arg == link_version_[ev.slot]) on_link(now, ev.slot);
        break;
      case ev_kind::clock:
        if (ev.arg == clock_version_[ev.slot]) {
          apply(now, ev.slot, flights_[ev.slot].clock(now));
          push_clock(ev.slot);
        }
        break;
      case ev_kind::ps_done: {
        const tile_at at = locate(ev.slot, ev.arg);
        flights_[ev.slot].computed_here(at.call, at.index);
        break;
      }
      case ev_kind::stored:
        on_stored(now, ev.slot);
        break;
      case ev_kind::sent:
        on_sent(now, ev.slot, ev.arg);
        break;
      case ev_kind::taken:  // the result is at the PS whatever befell its device since
        on_taken(now, ev.slot, ev.arg);
        break;
    }
  }
  // The checks' operand part the idle time did not cover ends the GEMM.
  double end = now;
  for (uint32_t s = 0; s < shards_; ++s) end = std::max(end, ps_begin(s, now) + prepare_left_[s]);
  now = end;
  double first_failure = infinity;
  for (double f : failed_at_)
    if (f >= 0) first_failure = std::min(first_failure, f);
  if (first_failure < infinity) totals.recovery_seconds += now - first_failure;
  // Copies still running are dropped; the next GEMM starts on an idle fleet.
  for (uint32_t link = 0; link < links_.size(); ++link)
    for (uint32_t flow = 0; flow < link_flows_[link]; ++flow)
      if (links_[link].running(flow)) links_[link].cancel(now, flow);
  relays_.end_run();
  ++runs_;
  std::fill(pipes_.begin(), pipes_.end(), pipeline{});
  for (uint32_t dev = 0; dev < devices_; ++dev)
    if (held_bytes_[dev] > 0) fleet.devices()[dev].busy_seconds += now - busy_since_[dev];
  std::fill(held_bytes_.begin(), held_bytes_.end(), 0);
  for (auto& e : epoch_) ++e;
  entries_.clear();
  events_.clear();
  return now;
}

}  // namespace cleave
