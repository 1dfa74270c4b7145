#include "actors/simulator/ps_work.hpp"

#include "actors/planner/ps_local_work.hpp"

namespace cleave {

ps_work estimate_ps_work(const model_config& model, int64_t batch, const planner_config& cfg,
                         int shards) {
  ps_work out;
  for (const auto& op : ps_local_ops(model, batch)) {
    const double t = ps_op_seconds(op, cfg.ps_flops, cfg.ps_memory_bandwidth, shards);
    (op.sharded ? out.optimizer_seconds : out.rowwise_seconds) += t;
  }
  const auto footprint = footprint_of(model);
  double activations = 0;
  for (const auto& l : footprint.layers) activations += l.activation_floats_per_sample;
  const uint64_t per_shard = training_bytes_per_parameter * footprint.parameters
                             / static_cast<uint64_t>(shards);
  out.shard_memory_bytes.assign(static_cast<size_t>(shards), per_shard);
  out.shard_memory_bytes[0] += static_cast<uint64_t>(activations * static_cast<double>(batch) * 4);
  return out;
}

}  // namespace cleave
