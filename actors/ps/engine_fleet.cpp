#include "actors/ps/engine_fleet.hpp"

#include <spdlog/spdlog.h>

#include "actors/ps/runtime_report.hpp"
#include "training/report.hpp"

namespace cleave {

caf::error engine_fleet::begin_step(int64_t step) {
  caf::error first;
  for (auto* engine : engines_)
    if (auto err = engine->begin_step(static_cast<uint64_t>(step)); err && !first) first = std::move(err);
  return first;
}

void engine_fleet::training_done(double allgather_seconds) {
  for (auto* engine : engines_) engine->finish_step();
  trained_per_shard_ = per_shard();
  trained_ = combine_shards(trained_per_shard_);
  trained_.totals.allgather_seconds += allgather_seconds;
}

void engine_fleet::begin_evaluation_batch() {
  for (auto* engine : engines_) engine->begin_evaluation_batch();
}

void engine_fleet::run_over() {
  for (auto* engine : engines_) engine->run_over();
}

void engine_fleet::log_training() const {
  const auto moved = traffic_of(trained_);
  spdlog::info("fleet: {} tiles, {:.1f} MB down, {:.1f} MB up, {} GEMMs kept local", trained_.tiles,
               moved.bytes_down / 1e6, moved.bytes_up / 1e6, trained_.local_gemms);
}

void engine_fleet::add_status(nlohmann::json& status, int64_t step, const std::vector<uint64_t>& memory_bytes) const {
  const auto now = per_shard();
  add_runtime_report(status, combine_shards(now), ps_shards_, step);
  status["shards"] = shard_report(now, memory_bytes, step);
}

nlohmann::json engine_fleet::report(const train_result& res, const std::vector<uint64_t>& memory_bytes) const {
  auto out = nlohmann::json::object();
  add_runtime_report(out, trained_, ps_shards_, trained_steps(res));
  out["per_shard"] = shard_report(trained_per_shard_.empty() ? per_shard() : trained_per_shard_, memory_bytes,
                                  res.steps);
  add_step_shares(out["per_shard"], trained_seconds(res));
  return out;
}

std::vector<runtime_accounts> engine_fleet::per_shard() const {
  std::vector<runtime_accounts> out;
  for (auto* engine : engines_) out.push_back(engine->accounts());
  return out;
}

}  // namespace cleave
