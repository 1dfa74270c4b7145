#pragma once
// The report's "modellets" section: where the output layer's ranges ended
// up, what moved over the device links, and what each lost device cost.

#include <nlohmann/json.hpp>

#include "actors/ps/modellet/modellet_ps.hpp"
#include "actors/ps/modellet/modellet_transport.hpp"

namespace cleave {

// samples: training samples this run (for the per-sample figures).
nlohmann::json modellet_report(const modellet_ps& ps, double samples);

// Adds what the exchanges took, over `steps` training steps (placing, the
// copies and the evaluation's sync included): the wall time the PS waited
// on answers and, with emulated devices, the paced link time.
void add_exchange_time(nlohmann::json& report, const modellet_exchange_time& t, int64_t steps);

}  // namespace cleave
