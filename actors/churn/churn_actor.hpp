#pragma once
// Applies a churn schedule to the in-process fleet: the training loop tells
// it each step, and it kills, hangs, slows or adds emulated devices at the
// scheduled moments. It also measures what the detector made of each
// failure: the time from a kill or hang to the suspect and dead events.
//
// Messages:
//   (churn_atom, int64 step)   a step begins
//   (get_atom)              -> std::string: a JSON summary (counts, detection latencies)

#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/churn/churn_schedule.hpp"
#include "actors/device/device_actor.hpp"

namespace cleave {

struct churn_state {
  churn_schedule schedule;
  device_options device_template;  // joining devices: this, with the event's profile
  caf::actor planner;
  uint64_t next_seq = 0;
  std::map<uint64_t, churn_event> pending;  // delayed into their step
  std::map<int32_t, double> failed_at;       // fleet id -> seconds when killed or hung
  std::set<int32_t> suspect_seen;
  std::vector<double> to_suspect, to_dead;   // detection latencies in seconds
  std::map<std::string, int> applied;
  std::set<caf::actor_addr> joined;
  static inline const char* name = "cleave.churn";
};

// The name devices are registered under: "device<index>".
std::string device_name(int32_t index);

caf::behavior churn_actor(caf::stateful_actor<churn_state>* self, churn_schedule schedule,
                          device_options device_template, caf::actor planner);

}  // namespace cleave
