#pragma once
// The PS's own work in one simulated step besides the GEMMs, and what each
// shard holds. The work is the planner's: ps_local_ops
// (actors/planner/ps_local_work.hpp) lists the step's row-wise ops and the
// optimizer, op by op as training/models/ runs them, each priced by
// ps_op_seconds (max of FLOPs / ps_flops and bytes / memory bandwidth; the
// optimizer split among the shards). The simulator and predict_step so
// charge the same seconds for it.

#include <cstdint>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/simulator/model_footprint.hpp"
#include "schema/model_config.hpp"

namespace cleave {

struct ps_work {
  double rowwise_seconds = 0;    // at the coordinator (shard 0)
  double optimizer_seconds = 0;  // each shard its slice, all at once
  double seconds() const { return rowwise_seconds + optimizer_seconds; }
  // Per shard: its slice's value, gradient and moments; the coordinator
  // also keeps the activations of the step for the backward pass.
  std::vector<uint64_t> shard_memory_bytes;
};

// cfg.ps_flops and cfg.ps_memory_bandwidth price the ops.
ps_work estimate_ps_work(const model_config& model, int64_t batch, const planner_config& cfg,
                         int shards);

}  // namespace cleave
