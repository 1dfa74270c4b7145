#include "actors/simulator/ps_work.hpp"

#include <algorithm>

namespace cleave {

ps_work estimate_ps_work(const model_footprint& model, int64_t batch, double ps_flops,
                         double memory_bandwidth, int shards) {
  ps_work out;
  const double samples = static_cast<double>(batch);
  const double elements = model.rowwise_elements_per_sample * samples;
  out.rowwise_seconds = std::max(elements * 8 / memory_bandwidth, elements * 8 / ps_flops);
  const double slice = static_cast<double>(model.parameters) / shards;
  out.optimizer_seconds = std::max(slice * 28 / memory_bandwidth, slice * 12 / ps_flops);
  double activations = 0;
  for (const auto& l : model.layers) activations += l.activation_floats_per_sample;
  const uint64_t per_shard = training_bytes_per_parameter * model.parameters
                             / static_cast<uint64_t>(shards);
  out.shard_memory_bytes.assign(static_cast<size_t>(shards), per_shard);
  out.shard_memory_bytes[0] += static_cast<uint64_t>(activations * samples * 4);
  return out;
}

}  // namespace cleave
