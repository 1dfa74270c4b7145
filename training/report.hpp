#pragma once
// The JSON summary a run writes at its end (--report=FILE): what every run
// reports. The distributed runtime adds its own keys
// (actors/ps/runtime_report.hpp); schema/json_file.hpp writes the file.

#include <nlohmann/json.hpp>

#include "training/trainer.hpp"

namespace cleave {

nlohmann::json make_report(const train_options& opts, const train_result& res, int devices,
                           int threads);

}  // namespace cleave
