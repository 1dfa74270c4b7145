#include "actors/planner/plan.hpp"

#include <cstdio>
#include <map>

namespace cleave {

const char* to_string(plan_bound b) {
  switch (b) {
    case plan_bound::none: return "empty";
    case plan_bound::threshold: return "split threshold";
    case plan_bound::no_device: return "no usable device";
    case plan_bound::memory: return "memory";
    case plan_bound::compute: return "compute";
    case plan_bound::ps_egress: return "PS egress";
    case plan_bound::ps_ingress: return "PS ingress";
    case plan_bound::device_downlink: return "device downlink";
    case plan_bound::device_uplink: return "device uplink";
    case plan_bound::one_tile: return "one tile";
    case plan_bound::latency: return "latency";
    case plan_bound::ps_tiles: return "PS per tile";
  }
  return "unknown";
}

const char* to_string(gemm_role r) {
  switch (r) {
    case gemm_role::forward: return "forward";
    case gemm_role::grad_input: return "grad_input";
    case gemm_role::grad_weight: return "grad_weight";
    case gemm_role::attn_scores: return "attn_scores";
    case gemm_role::attn_values: return "attn_values";
    case gemm_role::attn_grad: return "attn_grad";
  }
  return "unknown";
}

std::string format_numbers(const char* format, double a, double b, double c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

std::string split_reason(const plan& p) {
  return "split " + std::to_string(p.grid_m) + "x" + std::to_string(p.grid_n) + "x" +
         std::to_string(p.grid_k) + " = " + std::to_string(p.tiles.size()) + " tiles over " +
         std::to_string(p.devices_used) + " devices: " +
         format_numbers("%.3g s vs local %.3g s", p.predicted_seconds, p.local_seconds) +
         ", bound by " + to_string(p.bound);
}

double gemm_problem::flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

int64_t tile::flops() const { return 2 * (m1 - m0) * (n1 - n0) * (k1 - k0); }
uint64_t tile::a_bytes(uint64_t element_bytes) const {
  return element_bytes * static_cast<uint64_t>((m1 - m0) * (k1 - k0));
}
uint64_t tile::b_bytes(uint64_t element_bytes) const {
  return element_bytes * static_cast<uint64_t>((k1 - k0) * (n1 - n0));
}
uint64_t tile::c_bytes(uint64_t element_bytes) const {
  return element_bytes * static_cast<uint64_t>((m1 - m0) * (n1 - n0));
}

bool operator==(const tile& x, const tile& y) {
  return x.m0 == y.m0 && x.m1 == y.m1 && x.n0 == y.n0 && x.n1 == y.n1 && x.k0 == y.k0 &&
         x.k1 == y.k1;
}

uint64_t tile_bytes_down(const gemm_problem& g, const assignment& a) {
  return (a.a_cached ? 0 : a.t.a_bytes(g.element_bytes)) + (a.b_cached ? 0 : a.t.b_bytes(g.element_bytes));
}

double plan_seconds(const plan& p) { return p.local ? p.local_seconds : p.predicted_seconds; }

std::vector<std::pair<int32_t, uint64_t>> bytes_down_per_device(const plan& p) {
  std::map<int32_t, uint64_t> m;
  for (const auto& a : p.tiles)
    m[a.device] += tile_bytes_down(p.problem, a);
  return {m.begin(), m.end()};
}

}  // namespace cleave
