#pragma once
// Applies a churn schedule to the in-process fleet: the training loop tells
// it each step, and it kills, hangs, slows or adds emulated devices at the
// scheduled moments. It also measures what the detector made of each
// failure: the time from a kill or hang to the suspect and dead events.
// Its messages: churn_protocol.hpp.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/churn/churn_protocol.hpp"
#include "actors/churn/churn_schedule.hpp"
#include "schema/profile.hpp"

namespace cleave {

// Starts a joining device, linked to `parent`, with the event's profile and
// fleet index. The wiring that owns the fleet's device options provides it,
// so the churn actor needs no device implementation.
using device_spawner =
  std::function<caf::actor(caf::local_actor* parent, const device_profile& profile, int32_t fleet_index)>;

struct churn_state {
  churn_schedule schedule;
  device_spawner spawn_device;
  caf::actor planner;
  uint64_t next_seq = 0;
  std::map<uint64_t, churn_event> pending;  // delayed into their step
  std::map<int32_t, double> failed_at;       // fleet id -> seconds when killed or hung
  std::set<int32_t> suspect_seen;
  std::vector<double> to_suspect, to_dead;   // detection latencies in seconds
  // Events due in the steps the run began, whether or not their delay into
  // the step ran out before the run ended: what the seed decides.
  std::map<std::string, int> scheduled;
  // Events carried out: fewer than scheduled when the run ends inside a
  // delayed event's wait.
  std::map<std::string, int> applied;
  std::set<caf::actor_addr> joined;
  static inline const char* name = "cleave.churn";
};

// The name devices are registered under: "device<index>".
std::string device_name(int32_t index);

churn_handle::behavior_type churn_actor(churn_handle::stateful_pointer<churn_state> self,
                                       churn_schedule schedule, device_spawner spawn_device,
                                       caf::actor planner);

}  // namespace cleave
