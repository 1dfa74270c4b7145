#pragma once
// The report's per_shard for a run over `--role=ps-shard` processes: each
// shard's bytes each way as this process counted them (frames with their
// headers), in all and per step of training (its products, gradients and
// updates, without the attach and the evaluation), and what the shard says
// of itself (its peak memory, its payload bytes, its devices' side).

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/ps/shards/remote_shard.hpp"
#include "training/parameter_store.hpp"

namespace cleave {

class shard_process_report {
 public:
  // remotes[s] is `store`'s shard s; both outlive this object.
  shard_process_report(std::vector<remote_shard*> remotes, const parameter_store& store)
      : remotes_(std::move(remotes)), store_(store) {}

  // As training ends, before the evaluation: what the per-step figures count.
  void training_done();
  // One entry per shard, `steps` the training steps the per-step figures divide by.
  nlohmann::json per_shard(int64_t steps) const;

 private:
  std::vector<remote_shard*> remotes_;
  const parameter_store& store_;
  std::vector<remote_shard_traffic> trained_traffic_;
  std::vector<std::optional<shard_stats>> trained_stats_;  // each shard's own counts as training ends
};

// A shard process's device side (its stats with a device edge; zeros
// without one) into its per_shard entry, as in-process shards report theirs
// (runtime_report's shard_report).
void add_shard_device_stats(nlohmann::json& one, const shard_stats& st);

}  // namespace cleave
