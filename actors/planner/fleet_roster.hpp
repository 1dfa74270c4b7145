#pragma once
// Asking the planner who is in the fleet, and telling them that the run is
// over: the conversations a training run has with the fleet's registry.

#include <vector>

#include <caf/all.hpp>

#include "actors/planner/planner_protocol.hpp"

namespace cleave {

// Waits (at most 30 s) until the planner knows `devices` devices; by id.
caf::expected<std::vector<fleet_member>> wait_for_members(caf::actor_system& sys, const caf::actor& planner,
                                                          int devices);

// The devices the planner knows are told the run is over (waiting at most
// 2 s for their answers).
void tell_devices_run_over(caf::actor_system& sys, const caf::actor& planner);

}  // namespace cleave
