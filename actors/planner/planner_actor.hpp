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

#include "actors/planner/cost_model.hpp"
#include "actors/planner/plan.hpp"
#include "schema/messages.hpp"

namespace cleave {

using plan_atom = caf::atom_constant<caf::atom("plan")>;
using mirror_atom = caf::atom_constant<caf::atom("mirror")>;
using replace_atom = caf::atom_constant<caf::atom("replace")>;
using detector_atom = caf::atom_constant<caf::atom("detector")>;
using plans_atom = caf::atom_constant<caf::atom("plans")>;

struct fleet_member {
  int32_t id = -1;
  caf::actor handle;
  device_profile profile;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fleet_member& x) {
  return f(caf::meta::type_name("fleet_member"), x.id, x.handle, x.profile);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gemm_problem& x) {
  return f(caf::meta::type_name("gemm_problem"), x.m, x.n, x.k, x.role, x.sharers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tile& x) {
  return f(caf::meta::type_name("tile"), x.m0, x.m1, x.n0, x.n1, x.k0, x.k1);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, assignment& x) {
  return f(caf::meta::type_name("assignment"), x.t, x.device, x.predicted_finish, x.a_cached,
           x.b_cached);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plan& x) {
  return f(caf::meta::type_name("plan"), x.local, x.bound, x.reason, x.problem, x.grid_m, x.grid_n,
           x.grid_k, x.tiles, x.predicted_seconds, x.local_seconds, x.bytes_down, x.bytes_up,
           x.devices_used, x.grids_considered, x.grids_evaluated);
}

struct planner_options {
  planner_config cost;
  int min_devices = 0;  // fleet requests wait until this many devices joined
};

struct planner_state {
  planner_options opts;
  caf::actor detector;
  int32_t next_id = 0;
  std::set<int32_t> ever_used;  // ids are never given twice
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

// Messages:
//   (join_atom, join_request)            -> (welcome_atom, id, detector)
//                                           from a device actor, or a remote device's proxy
//   (event_atom, fleet_event)                                              from the detector
//   (quarantine_atom, id, why)           from a PS engine: the device leaves the fleet for good;
//                                        the detector, the device and subscribers are told
//   (subscribe_atom, actor)              the actor receives every fleet event after the planner acted
//                                        on it, starting with a join for each member it has now
//   (run_over_atom)                      -> ok: the devices are about to be told the run is over
//   (drain_atom, id)                     -> version: the device gets no new work from now on (it stays
//                                           in the registry, shown draining); an error if unknown
//   (fleet_atom)                         -> (version, vector<fleet_member>) once min_devices joined;
//                                           suspected and draining devices are left out
//   (plan_atom, gemm_problem)            -> plan
//   (mirror_atom, plan, gemm_role, gemm_problem) -> plan (mirror, or a fresh plan when a device is gone)
//   (replace_atom, plan, vector<int32_t> ids)   -> the plan's tiles placed on those of `ids` alive
//   (detector_atom)                      -> the detector the planner uses (a ps's console
//                                           asks it for the fleet's health)
//   (plans_atom)                         -> vector<plan>: the last plan handed out per GEMM shape
//   (caf::get_atom)                      -> (version, quorum reached, every member alive
//                                           (suspected ones too), vector<int32_t> suspected,
//                                           vector<int32_t> draining)
caf::behavior planner_actor(caf::stateful_actor<planner_state>* self, planner_options opts,
                            caf::actor detector);

void add_planner_message_types(caf::actor_system_config& cfg);

}  // namespace cleave
