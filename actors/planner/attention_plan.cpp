#include "actors/planner/attention_plan.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <string>

namespace cleave {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

plan local_attention(tile_op op, const gemm_problem& g, double local_seconds, plan_bound bound,
                     std::string reason) {
  plan p;
  p.op = op;
  p.problem = g;
  p.local = true;
  p.bound = bound;
  p.local_seconds = local_seconds;
  p.reason = std::move(reason);
  return p;
}

// Tiles of `per_tile` pairs (the last takes the rest), each to the device
// that would return it first.
plan assign(tile_op op, const gemm_problem& g, int64_t per_tile,
            const std::vector<const device_view*>& devices, const planner_config& cfg) {
  plan p;
  p.op = op;
  p.problem = g;
  p.local = false;
  p.grid_m = (g.m + per_tile - 1) / per_tile;
  const bool pipelined = cfg.pipelined_devices;
  std::vector<device_stages> stages(devices.size());
  for (size_t d = 0; d < devices.size(); ++d) {
    const double ready = std::max(0.0, devices[d]->ready_at);
    stages[d] = {ready, ready, ready};
  }
  auto pass_on = [&](size_t d, const attention_tile_cost& c, double sent) {
    const auto& pr = devices[d]->profile;
    return pass_tile(pr.latency, 1.0 / pr.downlink, 1.0 / pr.flops, 1.0 / pr.uplink, stages[d], c.down,
                     c.flops, c.up, sent, pipelined);
  };
  // Devices by when they would return a full tile alone (ties: lower id).
  const attention_tile_cost full = attention_tile(op, g, per_tile);
  using key = std::pair<double, size_t>;
  std::priority_queue<key, std::vector<key>, std::greater<key>> ready;
  for (size_t d = 0; d < devices.size(); ++d) ready.push({pass_on(d, full, -inf).finish, d});
  double max_finish = 0, tail = inf;
  std::vector<bool> used(devices.size(), false);
  for (int64_t m0 = 0; m0 < g.m; m0 += per_tile) {
    const int64_t m1 = std::min(g.m, m0 + per_tile);
    const attention_tile_cost c = attention_tile(op, g, m1 - m0);
    const size_t d = ready.top().second;
    ready.pop();
    const tile_pass done = pass_on(d, c, static_cast<double>(p.bytes_down + c.down) / cfg.ps_egress);
    stages[d] = done.after;
    p.bytes_down += c.down;
    p.bytes_up += c.up;
    max_finish = std::max(max_finish, done.finish);
    const auto& pr = devices[d]->profile;
    tail = std::min(tail, tile_seconds(pr.latency, 0, 1.0 / pr.flops, 1.0 / pr.uplink, 0, c.flops, c.up));
    used[d] = true;
    assignment a;
    a.t = tile{m0, m1, 0, g.n, 0, g.k};
    a.device = devices[d]->id;
    a.predicted_finish = done.finish;
    p.tiles.push_back(a);
    ready.push({pass_on(d, full, -inf).finish, d});
  }
  p.devices_used = static_cast<int32_t>(std::count(used.begin(), used.end(), true));
  p.predicted_seconds = split_seconds(max_finish, p.bytes_down, p.bytes_up, p.tiles.size(), tail, cfg);
  return p;
}

}  // namespace

plan plan_attention(tile_op op, const gemm_problem& g, const std::vector<device_view>& fleet,
                    const planner_config& fleet_cfg) {
  const auto [devices, cfg] = fair_share(fleet, fleet_cfg, g.sharers);
  const double flops = g.m > 0 ? attention_tile(op, g, g.m).flops : 0;
  const double local_seconds = flops / cfg.ps_flops;
  if (g.m <= 0) return local_attention(op, g, 0, plan_bound::none, "empty");
  if (flops < cfg.min_split_flops)
    return local_attention(op, g, local_seconds, plan_bound::threshold, "below the split threshold");
  std::vector<const device_view*> usable_devices;
  for (const auto& d : devices)
    if (usable(d.profile)) usable_devices.push_back(&d);
  std::sort(usable_devices.begin(), usable_devices.end(),
            [](const device_view* x, const device_view* y) { return x->id < y->id; });
  if (usable_devices.empty())
    return local_attention(op, g, local_seconds, plan_bound::no_device, "no usable device");
  plan best;
  best.predicted_seconds = inf;
  const auto max_tiles = static_cast<int64_t>(usable_devices.size()) * std::max(1, cfg.max_tiles_per_device);
  for (int64_t per_tile = 1; per_tile <= g.m; per_tile *= 2) {
    if ((g.m + per_tile - 1) / per_tile > max_tiles) continue;
    const uint64_t memory = attention_tile(op, g, per_tile).memory;
    std::vector<const device_view*> fit;
    for (const auto* d : usable_devices)
      if (d->profile.memory_bytes >= memory) fit.push_back(d);
    if (fit.empty()) break;  // larger tiles fit no better
    plan p = assign(op, g, per_tile, fit, cfg);
    if (p.predicted_seconds < best.predicted_seconds) best = std::move(p);
  }
  if (best.tiles.empty())
    return local_attention(op, g, local_seconds, plan_bound::memory, "no device can hold a tile");
  if (!(best.predicted_seconds < local_seconds))
    return local_attention(op, g, local_seconds, plan_bound::compute,
                           format_numbers("local: %.3g s on the PS beats %.3g s split", local_seconds,
                                          best.predicted_seconds));
  best.local_seconds = local_seconds;
  best.bound = split_bound(best, devices, cfg);
  best.reason = std::string(to_string(op)) + ": " + split_reason(best);
  return best;
}

}  // namespace cleave
