#pragma once
// The report's "modellets" section: where the output layer's ranges ended
// up, what moved over the device links, and what each lost device cost.

#include <nlohmann/json.hpp>

#include "actors/ps/modellet_ps.hpp"

namespace cleave {

// samples: training samples this run (for the per-sample figures).
nlohmann::json modellet_report(const modellet_ps& ps, double samples);

}  // namespace cleave
