#pragma once
// The planner: the fleet's registry (who joined, with which profile, who is
// alive) and the source of GEMM plans. The arithmetic is in cost_model.hpp,
// grid_search.hpp and placement.hpp; this
// actor only keeps state and answers.

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include <caf/all.hpp>

#include "actors/detector/detector_protocol.hpp"
#include "actors/planner/cost_model.hpp"
#include "actors/planner/member_ids.hpp"
#include "actors/planner/plan.hpp"
#include "actors/planner/planner_protocol.hpp"

namespace cleave {

struct planner_options {
  planner_config cost;
  int min_devices = 0;  // fleet requests wait until this many devices joined
};

struct planner_state {
  planner_options opts;
  detector_handle detector;
  member_ids ids;
  uint64_t version = 0;  // bumped on every membership change
  bool quorum_reached = false;  // min_devices were usable once
  std::map<int32_t, fleet_member> alive;
  std::set<int32_t> suspected;  // alive but left out of plans until they rejoin
  // Alive and heartbeating, but given no new work (an operator's drain)
  // until they leave; not a failure.
  std::set<int32_t> draining;
  // The run is over and its devices were told to leave: their going is
  // no failure, and is logged as such.
  bool run_over = false;
  // The last plan handed out for each (m, n, k, role): what the console
  // shows as the current plans.
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, plan> recent_plans;
  std::vector<caf::actor> subscribers;  // PS engines: they act on events mid-GEMM
  std::vector<caf::response_promise> waiting_for_fleet;
  static inline const char* name = "cleave.planner";
};

// Messages: planner_protocol.hpp.
caf::behavior planner_actor(caf::stateful_actor<planner_state>* self, planner_options opts,
                            detector_handle detector);

}  // namespace cleave
