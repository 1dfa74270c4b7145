#pragma once
// The matrix products one training step of a model hands to its gemm_engine,
// by shape: what the planner plans and the simulator replays. It follows the
// models in training/models/ (a test records a real step and compares).

#include <cstdint>
#include <string>
#include <vector>

#include "actors/planner/plan.hpp"
#include "schema/model_config.hpp"

namespace cleave {

// The dimension of a product that --ps-shards=S cuts into S slices, one per
// shard (actors/ps/shards/shard_slices.hpp): the weight's output columns, or its
// rows for the second matrix of a Megatron pair. none: not a weight product
// (attention's per-head products run whole on shard 0).
enum class shard_cut : uint8_t { none, m, n, k };

struct step_gemm {
  std::string name;     // e.g. "fc forward", "attn scores"
  gemm_problem problem; // m x n x k and role
  int64_t count = 1;    // times per step (layers, or batch x heads x layers)
  shard_cut cut = shard_cut::none;
  // A weight gradient's (grad_input, grad_weight) forward product: its index
  // in the step's list, whose plan the runtime mirrors (placement.hpp); -1
  // for the rest.
  int32_t forward = -1;
  // A GEMM, or fused attention over all of a layer's (sequence, head) pairs
  // (fuse_attention; problem: m pairs, n sequence, k head dimension).
  tile_op op = tile_op::gemm;
  double flops() const;  // of all `count` products
};

// The products of one step (forward then backward) of cfg on `batch`
// samples (sequences of cfg.context tokens for gpt), in the order the model
// first issues each shape. Products with equal shape and role are merged
// into one entry whose count adds up. cfg must be valid (make_model's checks).
std::vector<step_gemm> step_gemms(const model_config& cfg, int64_t batch);

// The step's per-head attention products as the planner can place them on
// devices: per layer one attention forward and one attention backward, each
// over every (sequence, head) pair of the batch, in place of the per-head
// GEMMs (the first of each takes their place in the order; `forward`
// indices follow). The live engine computes attention on the PS, per head:
// what step_gemms lists.
std::vector<step_gemm> fuse_attention(const std::vector<step_gemm>& gemms, const model_config& cfg,
                                      int64_t batch);

// The step's products as the engine issues them, a batch at a time, before
// it waits (gemm_engine::gemm_batch): a layer's grad_input with its
// grad_weight (linear_backward issues both; entries paired by their forward
// product and count), every other product alone. Ranges [first, last) of
// `gemms`, in order, covering every entry once.
struct product_batch {
  size_t first = 0, last = 0;
};
std::vector<product_batch> issue_batches(const std::vector<step_gemm>& gemms);

// Sum of flops() over the step's products.
double step_gemm_flops(const std::vector<step_gemm>& gemms);

}  // namespace cleave
