#pragma once
// The PS's own work in one step besides the GEMMs, estimated from FLOPs and
// bytes: the row-wise ops (norms, softmax, activation functions, residuals,
// biases, loss) at the coordinator, memory-bound, and the AdamW update of
// each shard's slice, both at whichever of the PS's FLOP/s or memory
// bandwidth binds; and what each shard holds. One function: the simulator
// and its report read the same numbers.

#include <cstdint>
#include <vector>

#include "actors/simulator/model_footprint.hpp"

namespace cleave {

struct ps_work {
  double rowwise_seconds = 0;    // at the coordinator (shard 0)
  double optimizer_seconds = 0;  // each shard its slice, all at once
  double seconds() const { return rowwise_seconds + optimizer_seconds; }
  // Per shard: its slice's value, gradient and moments; the coordinator
  // also keeps the activations of the step for the backward pass.
  std::vector<uint64_t> shard_memory_bytes;
};

// Row-wise ops: each element read and written once per touch (8 bytes) and
// about 8 FLOPs (exp, tanh, the norms' sums). AdamW: per parameter 28 bytes
// (value, gradient, two moments read; value and moments written) and 12 FLOPs.
ps_work estimate_ps_work(const model_footprint& model, int64_t batch, double ps_flops,
                         double memory_bandwidth, int shards);

}  // namespace cleave
