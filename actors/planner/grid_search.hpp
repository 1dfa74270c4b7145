#pragma once
// The plan for a GEMM over a fleet: the search over tile grids and the
// assignment of tiles to devices, on the cost model (cost_model.hpp). Pure.

#include <cstdint>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/plan.hpp"

namespace cleave {

// Splits [0, size) into `parts` ranges whose inner edges are multiples of
// `align` (when size allows `parts` such ranges) and whose lengths differ by
// at most one `align` unit, except that the last range absorbs a ragged end.
// Returns parts + 1 edges, first 0 and last size.
std::vector<int64_t> split_edges(int64_t size, int64_t parts, int64_t align);

// The plan for a GEMM over exactly the given devices, as one planner sees
// them (fair_share and selection already applied: see make_plan).
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
//    earliest predicted finish (its stages' queued work + tile time with its
//    cached operands: pass_tile, pipelined when cfg.pipelined_devices). When
//    the PS's egress binds, the choice is by max(finish, bytes sent so far
//    including this tile / ps_egress) first, so a device that holds an
//    operand can win over an idle one that needs both; otherwise that is the
//    same device. Never a device whose memory_bytes is below the working set
//    of the grid's largest tile; ties go to the lower device id. Faster
//    devices therefore get more tiles. A block counts as cached when the
//    device's previous tile had it and its cache (default_cache_bytes,
//    float32 blocks) keeps it: when A and B both fit. A
//    tile's finish is never before the PS sent its operands (the PS sends in
//    plan order) plus its compute, result and latencies;
//  - predicted_seconds = max(latest device finish, bytes_down / ps_egress +
//    egress_tail, bytes_up / ps_ingress);
//  - deterministic: the same inputs, in any device order, give the same plan.
plan search_grids(const gemm_problem& g, const std::vector<device_view>& devices,
                  const planner_config& cfg);

// The plan for a GEMM over a fleet: the fleet's share for one of g.sharers
// planners (fair_share), the devices that take part (device_selection.hpp:
// usable, able to hold a minimal tile, reliability priced in, and none whose
// inclusion lengthens the predicted time), then search_grids on those.
plan make_plan(const gemm_problem& g, const std::vector<device_view>& devices,
               const planner_config& cfg);

// A ranking re-ordered so that each of its prefixes takes devices evenly
// from every relay: the first of each relay's devices (in the ranking's
// order), then the second of each, and so on. make_plan plans these
// prefixes beside the ranking's own when the fleet has relays.
std::vector<device_view> spread_over_relays(const std::vector<device_view>& ranked);

// The fleet-level prediction used by benchmarks: predicted seconds of a list
// of GEMMs run one after another, each planned with make_plan on an idle fleet.
double predict_sequence(const std::vector<gemm_problem>& gemms,
                        const std::vector<device_view>& devices, const planner_config& cfg);

}  // namespace cleave
