#pragma once
// The plan for one GEMM: selective (stay on the PS or not), hybrid (the tile
// grid over M, N and K) and the assignment (which device takes which tile).
//
// Conventions. A GEMM is C[m,n] = op(A)[m,k] * op(B)[k,n] in float32. A tile
// is a half-open box [m0,m1) x [n0,n1) x [k0,k1); the device receives the
// A block (m1-m0)x(k1-k0) and the B block (k1-k0)x(n1-n0) unless it already
// holds them, and returns the C block (m1-m0)x(n1-n0) (a partial sum when K is
// split; the PS adds partials). A device runs its tiles one after another in
// the order they appear in the plan.
//
// Within one plan, an operand block is "cached" for a tile when the same
// device's previous tile in the plan used the same block: that needs no
// memory beyond the tile's own working set, so it holds on any device cache.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gemm.hpp"

namespace cleave {

// What limits a plan. A local plan says why it stays on the PS: the product
// is empty or below the split threshold, no device is usable, no device can
// hold a tile (memory), or the best distributed time's lower bound was set
// by one of the limits below and could not beat the PS. A split plan says
// which limit its predicted time is: the PS's egress or ingress, or the
// slowest device's compute, downlink, uplink or latency.
enum class plan_bound : uint8_t {
  none = 0,         // an empty product
  threshold,        // fewer FLOPs than the split threshold
  no_device,        // no usable device
  memory,           // no device can hold a tile
  compute,          // devices' FLOP/s
  ps_egress,        // the PS's link, sending operands
  ps_ingress,       // the PS's link, receiving results
  device_downlink,  // devices' downlinks
  device_uplink,    // devices' uplinks
  one_tile,         // a single tile on the fastest device
  latency,          // round trips
  ps_tiles,         // the PS's own work per tile
};

const char* to_string(plan_bound b);
const char* to_string(gemm_role r);

// A device computes in float32: what a tile's blocks take in its memory.
constexpr uint64_t gemm_element_bytes = 4;

struct gemm_problem {
  int64_t m = 0, n = 0, k = 0;
  gemm_role role = gemm_role::forward;
  // PS shards planning their slices of one product at the same time: each
  // plans on its fair share of the fleet (see fair_share).
  int32_t sharers = 1;
  // Bytes an operand element, and a result element, takes on the wire
  // (--wire, schema/wire_precision.hpp: 4 for fp32, 2 for bf16, each
  // direction its own under bf16-operands). Whoever sets one sets both.
  uint64_t element_bytes = gemm_element_bytes;
  uint64_t result_element_bytes = gemm_element_bytes;
  double flops() const;  // 2 m n k
};

struct tile {
  int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0, k0 = 0, k1 = 0;  // half-open
  int64_t flops() const;                                   // 2 (m1-m0)(n1-n0)(k1-k0)
  // The blocks' bytes at `element_bytes` each (a problem's element_bytes on
  // the wire, gemm_element_bytes in a device's memory).
  uint64_t a_bytes(uint64_t element_bytes) const;  // (m1-m0)(k1-k0) elements
  uint64_t b_bytes(uint64_t element_bytes) const;  // (k1-k0)(n1-n0) elements
  uint64_t c_bytes(uint64_t element_bytes) const;  // (m1-m0)(n1-n0) elements
};

bool operator==(const tile& x, const tile& y);

// What a plan's tiles compute: blocks of a GEMM, or fused attention over a
// range [m0, m1) of a layer's (sequence, head) pairs (the problem's m is the
// pair count, n the sequence length, k the head dimension; a tile spans all
// of n and k). Forward takes Q, K and V and returns O and the softmax's log
// of sums (one float per query); backward takes Q, K, V, dO, the log of
// sums and D = rowsum(dO o O), recomputes the scores, and returns dQ, dK
// and dV, as FlashAttention's backward does.
enum class tile_op : uint8_t { gemm, attention_forward, attention_backward };

const char* to_string(tile_op op);

struct assignment {
  tile t;
  int32_t device = -1;
  double predicted_finish = 0;  // seconds from now
  bool a_cached = false, b_cached = false;
};

struct plan {
  bool local = true;     // selective: run on the PS
  tile_op op = tile_op::gemm;
  plan_bound bound = plan_bound::none;  // what limits it (see plan_bound)
  std::string reason;    // why, in words, for logs and the admin console
  gemm_problem problem;  // what was planned
  int64_t grid_m = 1, grid_n = 1, grid_k = 1;
  std::vector<assignment> tiles;  // empty when local; in issue order
  double predicted_seconds = 0;   // wall time of the distributed GEMM (0 when local)
  double local_seconds = 0;       // time on the PS
  uint64_t bytes_down = 0, bytes_up = 0;
  int32_t devices_used = 0;
  int32_t grids_considered = 0;  // grids whose lower bound was computed (diagnostics)
  int32_t grids_evaluated = 0;   // of those, grids whose assignment was simulated
};

// Bytes the PS sends with the tile: its blocks not marked cached, at the
// problem's wire element size.
uint64_t tile_bytes_down(const gemm_problem& g, const assignment& a);

// A tile of a plan of any op: what the PS sends with it (attention: every
// operand; statistics travel as float32), what comes back, its FLOPs and
// the bytes a device holds while it has it (float32).
uint64_t tile_down_bytes(const plan& p, const assignment& a);
uint64_t tile_up_bytes(const plan& p, const tile& t);
double tile_flops(const plan& p, const tile& t);
uint64_t tile_memory(const plan& p, const tile& t);

// The same for `pairs` pairs of an attention op on problem g (m pairs, n
// sequence, k head dimension), for planners that size tiles before making them.
struct attention_tile_cost {
  uint64_t down = 0, up = 0, memory = 0;
  double flops = 0;
};
attention_tile_cost attention_tile(tile_op op, const gemm_problem& g, int64_t pairs);

// A plan that keeps g on the PS, and why.
plan local_plan(const gemm_problem& g, double local_seconds, plan_bound bound, std::string reason);

// Predicted seconds of a plan as executed: predicted_seconds when
// distributed, local_seconds when local.
double plan_seconds(const plan& p);

// Bytes each device of a plan receives: (device id, bytes), ascending id.
std::vector<std::pair<int32_t, uint64_t>> bytes_down_per_device(const plan& p);

// A split plan's reason: its grid, tiles, devices, predicted and local
// seconds, and its bound.
std::string split_reason(const plan& p);

// printf-style formatting of up to three numbers, for plans' reasons.
std::string format_numbers(const char* format, double a, double b = 0, double c = 0);

}  // namespace cleave
