#pragma once
// The JSON summary a run writes at its end (--report=FILE).

#include <string>

#include <caf/error.hpp>
#include <nlohmann/json.hpp>

#include "actors/ps/distributed_gemm.hpp"
#include "actors/ps/trainer.hpp"

namespace cleave {

// The fields every run reports; the runtime adds its own keys to the result.
nlohmann::json make_report(const train_options& opts, const train_result& res, int devices,
                           int threads);

// The distributed runtime's accounting over the training steps (taken before
// the final evaluation): fleet totals, per device, and where the time went.
void add_runtime_report(nlohmann::json& report, const runtime_accounts& acc, int ps_shards,
                        int64_t steps);

// Written to a temporary file and renamed, so a reader never sees half a report.
caf::error write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace cleave
