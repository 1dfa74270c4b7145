#pragma once
// The plan for a fused attention op (plan.hpp's tile_op) over a fleet. Its
// tiles are ranges of whole (sequence, head) pairs: the pairs share no
// operand, so a tile's bytes are its pairs' and the only choice is how many
// pairs a tile takes. Each size (powers of two, up to all the pairs) is
// assigned as the grid search assigns a grid: tile after tile in plan order
// to the device that would return it first (pass_tile, the PS sending its
// bytes in plan order), and the fastest wins. Selective as every plan: local
// when below the split threshold, when no device holds a tile, or when the
// PS computes it sooner. Pure.

#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/plan.hpp"

namespace cleave {

// op: attention_forward or attention_backward; g: m pairs, n sequence
// length, k head dimension, element_bytes and sharers as for a GEMM.
plan plan_attention(tile_op op, const gemm_problem& g, const std::vector<device_view>& devices,
                    const planner_config& cfg);

}  // namespace cleave
