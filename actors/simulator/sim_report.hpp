#pragma once
// The simulator's report: the keys of a live run's report where they apply
// (training/report.hpp, actors/ps/runtime_report.hpp) from virtual time,
// plus "simulated": true and what only a simulation knows (each step's
// parts, peak memory, the physical lower bounds).

#include <nlohmann/json.hpp>

#include "actors/simulator/baselines/baseline_run.hpp"
#include "actors/simulator/cleave_sim.hpp"

namespace cleave {

// The common head of every system's report: model, batch, fleet, steps.
nlohmann::json report_head(const std::string& system, const model_config& model, int64_t batch,
                           size_t devices, uint64_t seed);

// Mean and median of the step times, and the times themselves.
void add_step_seconds(nlohmann::json& j, const std::vector<double>& seconds);

void add_cleave_report(nlohmann::json& j, const sim_config& cfg, const sim_result& res);

// A baseline's run; one that does not fit reports "fits": false with the
// reason and no step time.
void add_baseline_report(nlohmann::json& j, const baseline_result& res);

}  // namespace cleave
