#pragma once
// The JSON summary a run writes at its end (--report=FILE), put together
// from sections: every run's (make_report), and one from each part of the
// run that counted something of its own (the engines' accounts in
// actors/ps/runtime_report.hpp, the shards, the model-lets, churn...).
// schema/json_file.hpp writes the file.

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/trainer.hpp"

namespace cleave {

// What every run reports: the model, the data, the losses, the step times.
nlohmann::json make_report(const train_options& opts, const train_result& res, int devices,
                           int threads);

// One part's keys, asked for once training is over: a section sees the
// run's result, and what its part counted it keeps itself.
using report_section = std::function<nlohmann::json(const train_result&)>;

// The report: every section's keys, asked for in turn (some ask an actor or
// measure something, so the order is the run's to choose). A key that a
// later section gives again replaces the earlier one's.
nlohmann::json assemble_report(const train_result& res, const std::vector<report_section>& sections);

// This run's training steps (a resumed run's earlier ones left out) and
// their wall time: what per-step figures divide by.
int64_t trained_steps(const train_result& res);
double trained_seconds(const train_result& res);

}  // namespace cleave
