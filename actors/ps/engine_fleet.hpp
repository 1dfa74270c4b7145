#pragma once
// The PS's distributed engines, one per in-process shard, as the training
// loop drives them: each step begun on all of them, and what they counted
// for the console's status and the report.

#include <cstdint>
#include <vector>

#include <caf/error.hpp>
#include <nlohmann/json.hpp>

#include "actors/ps/engine/distributed_gemm.hpp"
#include "training/trainer.hpp"

namespace cleave {

class engine_fleet {
 public:
  // engines[s] is shard s's and outlives this object; none: the local run.
  engine_fleet(std::vector<distributed_gemm*> engines, int ps_shards)
      : engines_(std::move(engines)), ps_shards_(ps_shards) {}

  bool empty() const { return engines_.empty(); }
  // A step begins on every engine; the first error stops training.
  caf::error begin_step(int64_t step);
  // As training ends, before the evaluation: every engine's step finished
  // and the accounts kept, so that the report leaves the evaluation out.
  // `allgather_seconds`: the sharded PS's exchanges, which no engine counts.
  void training_done(double allgather_seconds);
  // A batch of the final evaluation begins on every engine.
  void begin_evaluation_batch();
  // After the evaluation: what the engines keep for the next step goes.
  void run_over();
  // The training's traffic in one log line.
  void log_training() const;

  // The console's status at `step`: the accounts so far, and one row per
  // shard ("shards"); memory_bytes[s]: the bytes shard s keeps.
  void add_status(nlohmann::json& status, int64_t step, const std::vector<uint64_t>& memory_bytes) const;
  // The report's section: the fleet's totals, per device, and per shard
  // with its share of the steps' wall time.
  nlohmann::json report(const train_result& res, const std::vector<uint64_t>& memory_bytes) const;

 private:
  std::vector<runtime_accounts> per_shard() const;

  std::vector<distributed_gemm*> engines_;
  int ps_shards_;
  runtime_accounts trained_;
  std::vector<runtime_accounts> trained_per_shard_;
};

}  // namespace cleave
