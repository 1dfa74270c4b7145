#pragma once
// The PS's own work in one training step besides the matrix products: the
// row-wise ops (layer norms, GELU, softmax, residual adds, bias adds, the
// cross-entropy, embedding gathers, attention's head reshapes) and the AdamW
// update over every parameter, each as FLOPs and bytes of memory traffic
// (float32, every element read or written once per pass). They follow the
// models in training/models/. Pure: from the model's shape, no weights.

#include <cstdint>
#include <string>
#include <vector>

#include "schema/model_config.hpp"

namespace cleave {

struct ps_op {
  std::string name;  // e.g. "layernorm", "adamw"
  double flops = 0;
  double bytes = 0;
  // Split among the PS shards (the optimizer: each shard updates its slice);
  // otherwise the coordinator runs it on the gathered activations.
  bool sharded = false;
};

// The model's parameters (what make_model would allocate), from its shape.
int64_t parameter_count(const model_config& cfg);

// The step's row-wise ops and optimizer on `batch` samples (sequences of
// cfg.context tokens for gpt), forward and backward, one entry per kind.
std::vector<ps_op> ps_local_ops(const model_config& cfg, int64_t batch);

// One op's seconds per step on a PS of `ps_flops` FLOP/s and
// `memory_bandwidth` bytes/s: whichever of its FLOPs or its bytes binds
// (max(flops / ps_flops, bytes / memory_bandwidth)); a sharded op (the
// optimizer) runs on every one of `shards` shards at once, each a 1/shards
// slice. The planner's predict_step and the simulator both price the PS's
// own work with it.
double ps_op_seconds(const ps_op& op, double ps_flops, double memory_bandwidth, int32_t shards);

}  // namespace cleave
