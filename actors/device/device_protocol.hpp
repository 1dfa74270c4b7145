#pragma once
// What a device is told, by whom, and what it answers. A remote device's
// proxy (actors/gateway/device_proxy.hpp) answers the same messages in its
// place, so a PS engine cannot tell the two apart.
//
// The device stays a dynamically typed actor: its handle travels as
// fleet_member::handle (schema/, below every actor folder) and in the
// detector's watch, and half of its peers hold a proxy behind that handle,
// not a device; a typed handle would have to live in schema/ and bind the
// proxy to it. The messages, by sender:
//
//   from a PS engine:
//     tile_task                              -> tile_result, or tile_miss when an operand
//                                               named by key is not in its cache
//     (modellet_atom, slot, kind, payload, sent_at_ns) -> (uint16_t kind, std::vector<char> payload)
//                                               a model-let frame (schema/modellet_codec.hpp)
//   from the planner:
//     (quarantine_atom, std::string why)        it leaves: its results failed their checks
//     (run_over_atom)                        -> ok: it leaves with exit_reason::normal
//   from the detector:
//     (join_atom)                               it was declared dead but heartbeats: join again
//   from its edge link (a remote device):
//     (heartbeat_atom, double seconds)          the job's heartbeat interval
//   from the churn actor (emulated devices only):
//     (hang_atom)                               silent from now on: no heartbeats, no answers
//     (slow_atom, double factor)                paced times multiplied by factor
//     (crash_atom)                              it dies on its next tile or model-let frame
//     (caf::get_atom)                        -> int32_t: its fleet id (-1 before the welcome)
//
// It sends the planner (join_atom, join_request) and expects
// (welcome_atom, id, caf::actor detector); it then sends that detector
// (heartbeat_atom, id) every heartbeat interval.

#include "schema/messages.hpp"
