#pragma once
// The planner's pure core: the cost model of a sub-GEMM tile on a device, and
// the plan for one GEMM over a fleet (selective: stay on the PS or not;
// hybrid: the tile grid over M, N and K; assignment: which device takes which
// tile). No actors here; the planner actor caches plans per (shape, fleet).
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
#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"
#include "schema/profile.hpp"

namespace cleave {

constexpr uint64_t gemm_element_bytes = 4;  // float32 operands and results

struct gemm_problem {
  int64_t m = 0, n = 0, k = 0;
  gemm_role role = gemm_role::forward;
  // PS shards planning their slices of one product at the same time: each
  // plans on its fair share of the fleet (see fair_share).
  int32_t sharers = 1;
  double flops() const;  // 2 m n k
};

struct device_view {
  int32_t id = 0;
  device_profile profile;
  double ready_at = 0;  // seconds from now until the device is idle
};

struct tile {
  int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0, k0 = 0, k1 = 0;  // half-open
  int64_t flops() const;                                   // 2 (m1-m0)(n1-n0)(k1-k0)
  uint64_t a_bytes() const;                                // (m1-m0)(k1-k0) floats
  uint64_t b_bytes() const;                                // (k1-k0)(n1-n0) floats
  uint64_t c_bytes() const;                                // (m1-m0)(n1-n0) floats
};

bool operator==(const tile& x, const tile& y);

struct tile_cost {
  double seconds = 0;
  uint64_t bytes_down = 0, bytes_up = 0;
};

struct assignment {
  tile t;
  int32_t device = -1;
  double predicted_finish = 0;  // seconds from now
  bool a_cached = false, b_cached = false;
};

struct plan {
  bool local = true;     // selective: run on the PS
  std::string reason;    // why, for logs and the admin console
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

struct planner_config {
  double ps_flops = 5e10;     // the PS's own GEMM rate
  double ps_egress = 1.25e9;  // bytes/s the PS can send in total (shared by all devices)
  double ps_ingress = 1.25e9;
  double min_split_flops = 2.0 * 128 * 128 * 128;  // smaller GEMMs stay on the PS
  int max_tiles_per_device = 4;
  int64_t tile_align = 16;  // tile edges are multiples of this where possible
  // Grid assignments simulated per plan (see make_plan); 0 simulates every
  // grid whose bound can win (exact, slow for big fleets: for checking).
  int search_budget = 256;
};

// Time a device needs for a tile: 2 x latency (one way each: task down,
// result up) + bytes in / downlink + 2 m n k / flops + bytes out / uplink; a
// cached operand costs no transfer. Emulated devices pace themselves by it.
// A device with a non-positive or non-finite rate takes forever.
tile_cost predict_tile(const tile& t, const device_profile& p, bool a_cached, bool b_cached);

// Bytes a device must hold to compute the tile (A + B + C blocks).
uint64_t tile_working_set(const tile& t);

// Whether the planner can use a device at all (positive, finite rates).
bool usable(const device_profile& p);

// What one of `sharers` concurrent planners may count on: every device's
// FLOP/s, links and memory, and the PS's egress and ingress, divided among
// them (each shard has its own thread, so the PS's FLOP/s is not). make_plan,
// mirror_plan and replace_plan apply it for problem.sharers > 1.
struct fleet_share {
  std::vector<device_view> devices;
  planner_config cfg;
};
fleet_share fair_share(const std::vector<device_view>& devices, const planner_config& cfg,
                       int32_t sharers);

// Splits [0, size) into `parts` ranges whose inner edges are multiples of
// `align` (when size allows `parts` such ranges) and whose lengths differ by
// at most one `align` unit, except that the last range absorbs a ragged end.
// Returns parts + 1 edges, first 0 and last size.
std::vector<int64_t> split_edges(int64_t size, int64_t parts, int64_t align);

// The plan for a GEMM over the given devices.
//  - selective: local if 2mnk < min_split_flops, if no device can hold a tile
//    of any allowed grid, or if the best distributed prediction found is not
//    faster than local_seconds = 2mnk / ps_flops;
//  - hybrid: searches grids (grid_m, grid_n, grid_k), K split only for
//    gemm_role::grad_weight, with 1 <= tiles <= usable devices *
//    max_tiles_per_device, tile edges aligned; the ranges cover
//    [0,m)x[0,n)x[0,k) exactly and are disjoint. Part counts per dimension:
//    every count up to 16, then steps of about 6% in part size, and fractions
//    and multiples of the fleet size. Each grid has a cheap lower bound on
//    its time; grids are simulated (the assignment below) only while their
//    bound can beat the best so far: first the lowest-bound grid of each
//    bucket of tile count, K split and strip shape, then a local search around
//    the best ones, at most search_budget simulations (0: every grid in bound
//    order; slow). Over random shapes and fleets the budgeted search
//    lands within 0.5% of the exhaustive one on average (12% worst seen);
//  - assignment: tiles largest first; each goes to the device with the
//    earliest predicted finish (ready_at + queued work + tile time with its
//    cached operands). When the PS's egress binds, the choice is by
//    max(finish, bytes sent so far including this tile / ps_egress) first, so
//    a device that holds an operand can win over an idle one that needs both;
//    otherwise that is the same device. Never a device whose memory_bytes is
//    below the working set of the grid's largest tile; ties go to the lower
//    device id. Faster devices therefore get more tiles;
//  - predicted_seconds = max(latest device finish, bytes_down / ps_egress,
//    bytes_up / ps_ingress);
//  - deterministic: the same inputs, in any device order, give the same plan.
plan make_plan(const gemm_problem& g, const std::vector<device_view>& devices,
               const planner_config& cfg);

// Backward plans that reuse a forward plan's placement. Forward
// Y[m,n] = X[m,k] W[k,n] with tiles (m-range, n-range, all of k) on device d:
//  grad_input  dX[m,k] = dY[m,n] W^T: tile (m-range, all of k, K = n-range) on
//    d; B (the W block) cached, A (the dY block) sent; partials over the
//    forward n-blocks are summed at the PS (grid_k = forward grid_n).
//  grad_weight dW[k,n] = X^T dY: tile (all of k, n-range, K = m-range) on d;
//    A (the X block) cached, B (the dY block) sent, or cached as well when
//    `grad_input` (the mirrored grad_input plan) sent that dY block to d.
// Returns std::nullopt when the forward plan is local or splits K, the shapes
// do not match, the role is neither grad_input nor grad_weight, a placed
// device is not in `alive` (by id) or unusable, or a tile no longer fits its
// device's memory: the caller then falls back to make_plan.
std::optional<plan> mirror_plan(const plan& forward, gemm_role role, const gemm_problem& backward,
                                const std::vector<device_view>& alive, const planner_config& cfg,
                                const plan* grad_input = nullptr);

// The same tiles, in the same order, placed on `devices`: for churn. Only
// the devices change, so the numbers a GEMM produces (its K partials, added
// in tile order) do not depend on who is alive. Tiles largest first, each to
// the device with the earliest predicted finish (no operand assumed cached)
// that can hold it, ties to the lower id; a tile no device can hold gets
// device -1 (the PS computes it). A local plan is returned unchanged.
plan replace_plan(const plan& p, const std::vector<device_view>& devices,
                  const planner_config& cfg);

// Predicted seconds of a plan as executed: predicted_seconds when
// distributed, local_seconds when local.
double plan_seconds(const plan& p);

// The fleet-level prediction used by benchmarks: predicted seconds of a list
// of GEMMs run one after another, each planned with make_plan on an idle fleet.
double predict_sequence(const std::vector<gemm_problem>& gemms,
                        const std::vector<device_view>& devices, const planner_config& cfg);

// Bytes each device of a plan receives: (device id, bytes), ascending id.
std::vector<std::pair<int32_t, uint64_t>> bytes_down_per_device(const plan& p);

}  // namespace cleave
