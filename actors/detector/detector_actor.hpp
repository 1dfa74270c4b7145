#pragma once
// The failure detector: heartbeats feed a phi-accrual level per device, and a
// CAF monitor on each device catches a lost connection at once. Subscribers
// (planner, PS shards, console) receive join / suspect / dead / rejoin events.

#include <deque>
#include <map>
#include <vector>

#include <caf/all.hpp>

#include "actors/detector/detector_options.hpp"
#include "actors/detector/detector_protocol.hpp"
#include "actors/detector/phi_accrual.hpp"

namespace cleave {

struct watched_device {
  caf::actor handle;
  phi_accrual level;
  bool suspected = false;
  bool dead = false;
  bool told_to_rejoin = false;  // dead, yet heard from: asked to join again
  bool quarantined = false;     // out for wrong results: no longer judged, never dead
  uint64_t peak_rss_bytes = 0;  // the device process's, from its heartbeats
};

struct detector_state {
  detector_options opts;
  std::map<int32_t, watched_device> devices;
  std::deque<device_health> departed;  // gone: their last verdict, newest last
  std::vector<caf::actor> subscribers;
  delay_histogram heartbeat_delay;  // edge heartbeats: read at the edge -> handled here
  double last_tick = -1;  // when the last tick ran (seconds, the actor clock's)
  double judge_from = 0;  // after a pause of this process: no verdicts before then
  uint64_t pauses = 0;
  static inline const char* name = "cleave.detector";
};

detector_handle::behavior_type detector_actor(detector_handle::stateful_pointer<detector_state> self,
                                             detector_options opts);

}  // namespace cleave
