#pragma once
// The relays of a live fleet as the console shows them (fleet.relays in
// /api/state, the cleave_relay_* families of /metrics): for each relay its
// devices, their traffic with the ps, and the share of their operands the
// ps only named because the relay's store or the device held them. The
// relay's own counters (bytes each way, its store's blocks) are in its log.

#include <nlohmann/json.hpp>

#include "actors/console/console_view.hpp"

namespace cleave {

// `training`: the training loop's status (its per_device accounts), or null.
nlohmann::json render_relays(const nlohmann::json& training, const planner_view& planner);

}  // namespace cleave
