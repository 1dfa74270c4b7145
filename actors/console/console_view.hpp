#pragma once
// What the admin console shows, as JSON: the training loop's latest status
// (step, loss, the fleet accounts of the report) and the live fleet, merging
// the planner's registry with the detector's suspicion levels, and the
// console's log of fleet events.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/console/controls.hpp"
#include "actors/console/event_log.hpp"
#include "actors/detector/detector_protocol.hpp"
#include "actors/planner/planner_protocol.hpp"

namespace cleave {

struct planner_view {
  std::string error;  // non-empty: the planner did not answer
  uint64_t version = 0;
  bool quorum = false;
  std::vector<fleet_member> members;  // alive, suspected ones included
  std::vector<int32_t> suspected;
  std::vector<int32_t> draining;  // an operator's drain: no new work
  std::vector<plan> plans;        // the last plan per GEMM shape
};

// The controls as the console holds them.
struct control_view {
  bool enabled = false;  // an --admin-token is configured
  loop_state loop;
  bool checkpoint_pending = false;  // asked for, not yet written
};

// `training` is null before the first step. Devices the detector still
// remembers but the planner dropped are listed as gone. `events` becomes
// "events": [{"time", "kind", "device", "phi", "detail"}], oldest first
// ("device" left out when the event is about no device, "phi" when it is 0,
// "detail" when empty), and "events_dropped" counts those the log forgot.
// "plans" lists the planner's current plan per shape (grid, devices,
// predicted time); "controls" what an operator may do and has asked.
nlohmann::json render_console(const nlohmann::json& training, const planner_view& planner,
                              const std::vector<device_health>& health,
                              const event_log& events = event_log(1),
                              const control_view& controls = {});

// Edge heartbeats' wait at the ps (the detector's delay_histogram) as
// "heartbeat_delay": {"count", "sum_seconds", "p50_seconds", "p99_seconds",
// "buckets": [{"le", "count"}, ...]} with cumulative counts, the last le
// "+Inf".
nlohmann::json render_heartbeat_delay(const delay_histogram& d);

// One plan as the console shows it.
nlohmann::json render_plan(const plan& p);

}  // namespace cleave
