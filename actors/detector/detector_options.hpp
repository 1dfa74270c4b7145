#pragma once
// How the failure detector judges silence. The simulator models detection
// with the same numbers (detection_time.hpp), so they stand apart from the
// actor.

#include <cstddef>

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
  // Dead also waits out this many times the longest silence the link has
  // recovered from, at most max_learned_silence_seconds (silence_verdict.hpp).
  double learned_silence_factor = 2;
  double max_learned_silence_seconds = 3;
  double min_stddev = 0.02;
  // Devices whose actor is gone are forgotten but for their verdict (dead or
  // quarantined), which the console lists: the newest this many are kept.
  size_t departed_kept = 1000;
  // A tick this much later than check_seconds means this process was paused
  // (descheduled on a loaded host, swapped): the silence it measured is
  // partly its own, and heartbeats that came meanwhile may still be unread.
  // No device is judged until heartbeat_seconds after such a tick, so a
  // silent device is reported at most that much (and the pause) later.
  double local_pause_seconds = 0.1;
};

}  // namespace cleave
