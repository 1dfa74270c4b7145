#pragma once
// The failure detector's interface, as a typed actor: the compiler checks
// every message a peer that holds a detector_handle sends it (the planner,
// the console) and the type of every answer.
//
// Devices heartbeat through the caf::actor the planner's welcome names,
// because a remote device's detector is its own edge link
// (actors/device/edge_link.hpp), not this actor; their heartbeats are the
// (heartbeat_atom, id) below all the same.

#include <cstdint>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/detector/delay_histogram.hpp"
#include "schema/messages.hpp"

namespace cleave {

// One device as the detector sees it (the admin console shows it).
struct device_health {
  int32_t id = -1;
  double phi = 0;  // suspicion now; 0 for a device declared dead
  bool suspected = false;
  bool dead = false;
  bool quarantined = false;
  // The device process's peak resident bytes, as its heartbeats last said
  // (0: an emulated device, or one that does not say).
  uint64_t peak_rss_bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_health& x) {
  return f(caf::meta::type_name("device_health"), x.id, x.phi, x.suspected, x.dead,
           x.quarantined, x.peak_rss_bytes);
}

using detector_handle = caf::typed_actor<
  // The subscriber hears (event_atom, fleet_event): join, suspect, dead and
  // rejoin, for every device watched.
  caf::reacts_to<subscribe_atom, caf::actor>,
  // From the planner: judge this device from now on, by its heartbeats and
  // a monitor on its actor.
  caf::reacts_to<watch_atom, int32_t, caf::actor>,
  // From the planner: stop judging the device; its heartbeats and its end
  // are ignored from now on.
  caf::reacts_to<quarantine_atom, int32_t>,
  caf::reacts_to<heartbeat_atom, int32_t>,
  // From a device's proxy at the edge: with the time (steady clock, ns) the
  // edge read the heartbeat. A proxy in this process is taken at its word,
  // so the ps's own queueing never counts as the device's lateness; one in
  // another process (another clock) is timed on arrival here, as above.
  // Last, the device process's peak resident bytes (0: unsaid).
  caf::reacts_to<heartbeat_atom, int32_t, int64_t, uint64_t>,
  // How long edge heartbeats waited in this process between the edge's read
  // and the detector's update (proxies in this process only).
  caf::replies_to<caf::get_atom, heartbeat_atom>::with<delay_histogram>,
  // Every watched device's health, by id.
  caf::replies_to<caf::get_atom>::with<std::vector<device_health>>,
  // Its own clock: phi is evaluated on each tick.
  caf::reacts_to<tick_atom>>;

void add_detector_message_types(caf::actor_system_config& cfg);

}  // namespace cleave
