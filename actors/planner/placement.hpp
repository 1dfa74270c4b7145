#pragma once
// Placing a plan's tiles again without re-cutting them: a backward product
// mirrors its layer's forward placement (so a device that holds X_i and W_j
// is sent only dY_ij), and churn re-places a plan on the devices left. Pure.

#include <optional>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/plan.hpp"

namespace cleave {

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

// The plan for a weight gradient: the mirror of its forward plan when there
// is one that predicts no slower than a plan of its own (make_plan), else
// that plan. A mirror saves resending the blocks the devices hold, but keeps
// the forward grid, whose K partials (one per forward column block) can cost
// the devices' uplinks more than the saved downlink bytes. The planner
// actor answers the runtime's mirror requests with it.
struct backward_choice {
  plan p;
  bool mirrored = false;
};
backward_choice backward_plan(const plan& forward, gemm_role role, const gemm_problem& backward,
                              const std::vector<device_view>& alive, const planner_config& cfg);

// The same tiles, in the same order, placed on `devices`: for churn. Only
// the devices change, so the numbers a GEMM produces (its K partials, added
// in tile order) do not depend on who is alive. Tiles largest first, each to
// the device with the earliest predicted finish (no operand assumed cached)
// that can hold it, ties to the lower id; a tile no device can hold gets
// device -1 (the PS computes it). With pipelined_devices (device processes,
// many tiles each, their caches holding each list's blocks) the devices
// left keep their tiles and each lost device's list moves whole, in order,
// to the device that would return it first (pass_tile, the PS sending in
// plan order): the blocks each device is sent stay those of the plan, where
// re-placing tile by tile would send every tile both blocks. A local plan
// is returned unchanged.
plan replace_plan(const plan& p, const std::vector<device_view>& devices,
                  const planner_config& cfg);

}  // namespace cleave
