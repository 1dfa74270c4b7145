#pragma once
// The distributed runtime's part of the run's report: fleet totals, per
// device, churn, and where the step's time went.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "actors/ps/engine/distributed_gemm.hpp"

namespace cleave {

// The engines' accounting over the training steps (taken before the final
// evaluation), added to `report`.
void add_runtime_report(nlohmann::json& report, const runtime_accounts& acc, int ps_shards,
                        int64_t steps);

}  // namespace cleave
