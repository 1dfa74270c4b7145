#include "actors/planner/step_prediction.hpp"

#include <algorithm>
#include <map>

#include "actors/planner/device_selection.hpp"
#include "actors/planner/grid_search.hpp"
#include "actors/planner/placement.hpp"

namespace cleave {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

gemm_problem slice_of(const step_gemm& g, int32_t shards) {
  gemm_problem s = g.problem;
  s.sharers = shards;
  switch (g.cut) {
    case shard_cut::m: s.m = ceil_div(s.m, shards); break;
    case shard_cut::n: s.n = ceil_div(s.n, shards); break;
    case shard_cut::k: s.k = ceil_div(s.k, shards); break;
    case shard_cut::none: break;
  }
  return s;
}

// Adds one occurrence of a product, `count` times, to the step's parts: a
// split product's PS work per tile goes to ps_tiles, and the rest of its time
// to the PS's link when that is the rest of its prediction, else to the last
// device's parts in proportion.
void add_parts(step_parts& parts, const product_prediction& pp) {
  double t = pp.total_seconds();
  if (pp.p.local) {
    parts.ps_local_compute += t;
    return;
  }
  const plan_parts& q = pp.parts;
  const double count = static_cast<double>(pp.gemm.count);
  const double per_tile = std::min(t, q.ps_tiles * count);
  parts.ps_tiles += per_tile;
  t -= per_tile;
  // The links' and the devices' time, less a rounding's worth: (x + y) - y
  // may come back an ulp below x.
  const double rest = (pp.seconds - q.ps_tiles) * (1 - 1e-12);
  if (q.ps_egress >= rest && q.ps_egress >= q.ps_ingress) {
    parts.ps_egress += t;
    return;
  }
  if (q.ps_ingress >= rest) {
    parts.ps_ingress += t;
    return;
  }
  const double device = q.compute + q.down + q.up + q.latency;
  if (!(device > 0)) {
    parts.device_compute += t;
    return;
  }
  parts.device_compute += t * q.compute / device;
  parts.device_down += t * q.down / device;
  parts.device_up += t * q.up / device;
  parts.latency += t * q.latency / device;
}

}  // namespace

double step_parts::total() const {
  return device_compute + device_down + device_up + latency + ps_egress + ps_ingress + ps_tiles +
         ps_local_compute + ps_memory_ops;
}

step_prediction predict_step(const model_config& cfg, int64_t batch,
                             const std::vector<device_view>& fleet, const planner_config& pc,
                             int32_t shards, const std::function<void(size_t, size_t)>& progress) {
  step_prediction out;
  out.shards = std::max<int32_t>(1, shards);
  out.devices_offered = static_cast<int32_t>(fleet.size());
  // What one shard's planner sees, with reliability priced in: the plans'
  // parts are read on it.
  auto [view, view_cfg] = fair_share(fleet, pc, out.shards);
  for (auto& d : view) {
    d.profile = expected_profile(d, view_cfg.detection_seconds);
    d.failure_probability = 0;
  }
  std::map<int32_t, device_traffic> traffic;
  out.shard_bytes_down.assign(static_cast<size_t>(out.shards), 0);
  out.shard_bytes_up.assign(static_cast<size_t>(out.shards), 0);
  const auto gemms = step_gemms(cfg, batch);
  for (const auto& g : gemms) {
    product_prediction pp;
    pp.gemm = g;
    pp.slice = slice_of(g, out.shards);
    if (g.forward >= 0 && static_cast<size_t>(g.forward) < out.products.size()) {
      auto choice = backward_plan(out.products[static_cast<size_t>(g.forward)].p, g.problem.role,
                                  pp.slice, fleet, pc);
      pp.p = std::move(choice.p);
      pp.mirrored = choice.mirrored;
    } else {
      pp.p = make_plan(pp.slice, fleet, pc);
    }
    pp.seconds = view_cfg.pipelined_devices ? pipelined_seconds(pp.p, view, view_cfg)
                                            : plan_seconds(pp.p);
    pp.parts = parts_of(pp.p, view, view_cfg);
    // The PS's own work on the tiles, op by op, is the PS's thread's: it
    // overlaps nothing in this sum (the simulator overlaps what the engine does).
    const double ops = ps_plan_work(pp.p, pc.ps_ops, pp.p.problem.element_bytes < gemm_element_bytes).total();
    pp.seconds += ops;
    pp.parts.ps_tiles += ops;
    add_parts(out.parts, pp);
    out.gemm_flops += g.flops();
    // Every shard sends its slice's bytes (attention only shard 0) to the
    // same devices: each shard plans on the same fleet.
    const int32_t senders = g.cut == shard_cut::none ? 1 : out.shards;
    const auto count = static_cast<uint64_t>(g.count);
    for (int32_t s = 0; s < senders; ++s) {
      out.shard_bytes_down[static_cast<size_t>(s)] += pp.p.bytes_down * count;
      out.shard_bytes_up[static_cast<size_t>(s)] += pp.p.bytes_up * count;
    }
    for (const auto& a : pp.p.tiles) {
      if (a.device < 0) continue;
      auto& t = traffic[a.device];
      t.id = a.device;
      t.bytes_down += tile_bytes_down(pp.p.problem, a) * count * static_cast<uint64_t>(senders);
      t.bytes_up += a.t.c_bytes(pp.p.problem.result_element_bytes) * count * static_cast<uint64_t>(senders);
    }
    out.products.push_back(std::move(pp));
    if (progress) progress(out.products.size(), gemms.size());
  }
  out.ps_ops = ps_local_ops(cfg, batch);
  for (const auto& op : out.ps_ops) {
    const double t = ps_op_seconds(op, pc.ps_flops, pc.ps_memory_bandwidth, out.shards);
    out.ps_op_seconds.push_back(t);
    out.parts.ps_memory_ops += t;
  }
  for (const auto& [id, t] : traffic) out.devices.push_back(t);
  out.devices_used = static_cast<int32_t>(out.devices.size());
  out.seconds = out.parts.total();
  return out;
}

}  // namespace cleave
