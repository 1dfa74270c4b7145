#pragma once
// The failure detector: heartbeats feed a phi-accrual level per device, and a
// CAF monitor on each device catches a lost connection at once. Subscribers
// (planner, PS shards, console) receive join / suspect / dead / rejoin events.

#include <map>
#include <vector>

#include <caf/all.hpp>

#include "actors/detector/phi_accrual.hpp"
#include "schema/messages.hpp"

namespace cleave {

struct detector_options {
  double heartbeat_seconds = 0.1;  // what devices are told to send
  double check_seconds = 0.05;     // how often phi is evaluated
  double suspect_phi = 3;          // ~1 in 1000 chance the device is merely late
  double dead_phi = 8;
  // Dead also needs this much silence: a device that is slow but regular
  // (heartbeats a few intervals apart) is suspected, not killed, while
  // phi learns its rhythm. A lost connection is dead at once regardless.
  double dead_min_silence_seconds = 0.35;
  double min_stddev = 0.02;
};

struct watched_device {
  caf::actor handle;
  phi_accrual level;
  bool suspected = false;
  bool dead = false;
  bool told_to_rejoin = false;  // dead, yet heard from: asked to join again
  bool quarantined = false;     // out for wrong results: no longer judged, never dead
};

// One device as the detector sees it (the admin console shows it).
struct device_health {
  int32_t id = -1;
  double phi = 0;  // suspicion now; 0 for a device declared dead
  bool suspected = false;
  bool dead = false;
  bool quarantined = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_health& x) {
  return f(caf::meta::type_name("device_health"), x.id, x.phi, x.suspected, x.dead,
           x.quarantined);
}

struct detector_state {
  detector_options opts;
  std::map<int32_t, watched_device> devices;
  std::vector<caf::actor> subscribers;
  static inline const char* name = "cleave.detector";
};

// Besides heartbeats, watches and subscriptions:
//   (caf::get_atom) -> std::vector<device_health>, by id
//   (quarantine_atom, id)  from the planner: stop judging the device; its
//                          heartbeats and its end are ignored from now on
caf::behavior detector_actor(caf::stateful_actor<detector_state>* self, detector_options opts);

void add_detector_message_types(caf::actor_system_config& cfg);

}  // namespace cleave
