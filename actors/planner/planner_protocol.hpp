#pragma once
// What the planner is told and what it answers: the vocabulary its peers (the
// PS engines, devices and their proxies, the detector, the console, the
// training loop) share with it, without its state or its arithmetic.
//
// The planner stays a dynamically typed actor. Its joins come from device
// actors and from the device edge's proxies, and a remote device's "planner"
// is its own edge link (actors/device/edge_link.hpp), which speaks only the
// join's part of this protocol; the fleet's subscribers are engines,
// consoles and the churn actor, each with another interface. A typed handle
// would have to name every one of them, so the messages are listed here.
//
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

#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include "actors/planner/plan.hpp"
#include "schema/fleet_member.hpp"
#include "schema/messages.hpp"

namespace cleave {

using plan_atom = caf::atom_constant<caf::atom("plan")>;
using mirror_atom = caf::atom_constant<caf::atom("mirror")>;
using replace_atom = caf::atom_constant<caf::atom("replace")>;
using detector_atom = caf::atom_constant<caf::atom("detector")>;
using plans_atom = caf::atom_constant<caf::atom("plans")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gemm_problem& x) {
  return f(caf::meta::type_name("gemm_problem"), x.m, x.n, x.k, x.role, x.sharers, x.element_bytes,
           x.result_element_bytes);
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

void add_planner_message_types(caf::actor_system_config& cfg);

}  // namespace cleave
