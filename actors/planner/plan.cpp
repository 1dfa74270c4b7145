#include "actors/planner/plan.hpp"

#include <cstdio>
#include <map>

#include "actors/planner/cost_model.hpp"

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

const char* to_string(tile_op op) {
  switch (op) {
    case tile_op::gemm: return "gemm";
    case tile_op::attention_forward: return "attention forward";
    case tile_op::attention_backward: return "attention backward";
  }
  return "unknown";
}

attention_tile_cost attention_tile(tile_op op, const gemm_problem& g, int64_t pairs) {
  const auto p = static_cast<uint64_t>(pairs), s = static_cast<uint64_t>(g.n),
             dh = static_cast<uint64_t>(g.k), e = g.element_bytes, r = g.result_element_bytes,
             f = gemm_element_bytes;
  attention_tile_cost c;
  const double flops_per_pair = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(dh);
  if (op == tile_op::attention_forward) {
    c.down = e * 3 * p * s * dh;                 // Q, K, V
    c.up = r * p * s * dh + f * p * s;           // O, log of sums
    c.flops = 2 * flops_per_pair * static_cast<double>(p);  // Q K^T, P V
    c.memory = f * (4 * p * s * dh + p * s) + f * s * s;     // one pair's scores at a time
  } else {
    c.down = e * 4 * p * s * dh + f * 2 * p * s;  // Q, K, V, dO; log of sums, D
    c.up = r * 3 * p * s * dh;                    // dQ, dK, dV
    c.flops = 5 * flops_per_pair * static_cast<double>(p);  // S again, dV, dP, dQ, dK
    c.memory = f * (7 * p * s * dh + 2 * p * s) + 2 * f * s * s;
  }
  return c;
}

uint64_t tile_down_bytes(const plan& p, const assignment& a) {
  if (p.op == tile_op::gemm) return tile_bytes_down(p.problem, a);
  return attention_tile(p.op, p.problem, a.t.m1 - a.t.m0).down;
}

uint64_t tile_up_bytes(const plan& p, const tile& t) {
  if (p.op == tile_op::gemm) return t.c_bytes(p.problem.result_element_bytes);
  return attention_tile(p.op, p.problem, t.m1 - t.m0).up;
}

double tile_flops(const plan& p, const tile& t) {
  if (p.op == tile_op::gemm) return static_cast<double>(t.flops());
  return attention_tile(p.op, p.problem, t.m1 - t.m0).flops;
}

uint64_t tile_memory(const plan& p, const tile& t) {
  if (p.op == tile_op::gemm) return tile_working_set(t);
  return attention_tile(p.op, p.problem, t.m1 - t.m0).memory;
}

plan local_plan(const gemm_problem& g, double local_seconds, plan_bound bound, std::string reason) {
  plan p;
  p.local = true;
  p.bound = bound;
  p.problem = g;
  p.local_seconds = local_seconds;
  p.reason = std::move(reason);
  return p;
}

double plan_seconds(const plan& p) { return p.local ? p.local_seconds : p.predicted_seconds; }

std::vector<std::pair<int32_t, uint64_t>> bytes_down_per_device(const plan& p) {
  std::map<int32_t, uint64_t> m;
  for (const auto& a : p.tiles)
    m[a.device] += tile_bytes_down(p.problem, a);
  return {m.begin(), m.end()};
}

}  // namespace cleave
