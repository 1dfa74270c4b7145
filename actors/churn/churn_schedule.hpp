#pragma once
// Churn as a reproducible input for the in-process fleet: which emulated
// device dies, hangs or slows down, and when new ones join. Either a file
// (--churn=FILE) or a seeded random rate (--churn-rate, --seed). Devices are
// named by their index in the fleet: 0..N-1 at start, N, N+1, ... as they
// join. Plain data and arithmetic; actors/churn/churn_actor.hpp applies it.
//
// File format (JSON):
//   {"events": [
//     {"step": 10, "action": "die",  "device": 3, "after_seconds": 0.01},
//     {"step": 20, "action": "hang", "device": 4},
//     {"step": 30, "action": "slow", "device": 5, "factor": 8},
//     {"step": 40, "action": "join", "profile": "fast"},
//     {"step": 50, "action": "crash", "device": 6}]}
// "after_seconds" (default 0) delays the event into the step, so a device
// can die with tiles in flight.

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "kernels/random.hpp"
#include "schema/profile.hpp"

namespace cleave {

// crash: the device dies when its next tile arrives, so the failure always
// costs work in flight (files only; random schedules draw die, hang, slow
// and join).
enum class churn_action { die, hang, slow, join, crash };

const char* to_string(churn_action a);

struct churn_event {
  int64_t step = 0;
  double after_seconds = 0;
  churn_action action = churn_action::die;
  int32_t device = -1;   // fleet index; for join: the index the new device gets
  double factor = 1;     // slow: how many times slower
  device_profile profile;  // join: the new device's profile
};

class churn_schedule {
 public:
  // No churn at all.
  churn_schedule() = default;

  // Reads and checks a schedule: every event names a device that exists and
  // is still alive at that point, steps never go backwards.
  static caf::expected<churn_schedule> from_file(const std::string& path, int initial_devices);
  // The same from the file's text; `name` (the path) leads every error.
  static caf::expected<churn_schedule> from_text(std::string_view text, const std::string& name,
                                                 int initial_devices);

  // rate: expected events per step. Each event is die, hang, slow or join
  // with equal odds, aimed at a live device; at least one device stays alive
  // and well. Joining devices take `join_profile`.
  static churn_schedule random(double rate, uint64_t seed, int initial_devices,
                               device_profile join_profile);

  // The events due at `step`, in order. Steps must be asked in increasing
  // order (a random schedule draws them as it goes).
  std::vector<churn_event> due(int64_t step);

  bool empty() const { return rate_ == 0 && events_.empty(); }

 private:
  // Keeps the bookkeeping of which devices are alive, well and joined.
  struct fleet_state {
    int32_t next_index = 0;
    std::set<int32_t> healthy;  // neither dead nor hung nor slowed
    std::set<int32_t> alive;    // not dead (a hung device is still "alive")
  };
  static caf::error apply(fleet_state& fleet, churn_event& ev);

  std::vector<churn_event> events_;  // file schedules, sorted by step
  size_t next_ = 0;
  double rate_ = 0;
  uint64_t seed_ = 0;
  device_profile join_profile_;
  fleet_state fleet_;
};

}  // namespace cleave
