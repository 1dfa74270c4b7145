#pragma once
// The simulated fleet and what happens to it: each device's declared
// profile, whether it is alive (in fact) and a member (as the engine sees
// it, until the detector reports it), and what it did, summed over the run.
// Churn arrives as timed events (churn_feed) that the batch simulation
// applies when virtual time reaches them.

#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

#include "actors/churn/churn_schedule.hpp"
#include "schema/profile.hpp"

namespace cleave {

struct sim_device {
  device_profile profile;
  double slowdown = 1;  // churn "slow": every rate divided by this
  bool alive = true;    // computes and answers
  bool member = true;   // the engine plans with it and sends it tiles
  int32_t relay = -1;   // the relay it talks through (fleet_relays), -1: the PS itself
  // Summed over the run.
  uint64_t tiles = 0, bytes_down = 0, bytes_up = 0;
  double busy_seconds = 0, flops = 0;
  uint64_t peak_bytes = 0;  // largest working set it held (all shards' tiles at once)
};

// A churn event at a moment of virtual time. `seen` is the detector's
// report of an earlier die or hang: only then does the engine react.
struct timed_churn {
  double at = 0;
  churn_action action = churn_action::die;
  bool seen = false;
  int32_t device = -1;
  double factor = 1;
  device_profile profile;  // join
  uint64_t order = 0;      // ties: first scheduled, first applied
  bool operator>(const timed_churn& o) const {
    return at > o.at || (at == o.at && order > o.order);
  }
};

class sim_fleet {
 public:
  // relay_of: by device, its relay (empty: every device talks to the PS).
  // Devices that join later talk to the PS.
  explicit sim_fleet(const std::vector<device_profile>& devices,
                     const std::vector<int32_t>& relay_of = {});

  std::vector<sim_device>& devices() { return devices_; }
  const std::vector<sim_device>& devices() const { return devices_; }
  size_t size() const { return devices_.size(); }
  // Bumped whenever the members change: plans are re-placed (replace_plan).
  uint64_t epoch() const { return epoch_; }
  // Devices that joined become members when the next step begins (the
  // engine refreshes its fleet there).
  void admit_joined();
  // Applies a churn event at its moment; a die or hang schedules its
  // detection `detection_seconds` later into `feed`. True when the members changed.
  bool apply(const timed_churn& ev, double detection_seconds,
             std::priority_queue<timed_churn, std::vector<timed_churn>, std::greater<>>& feed);

  uint64_t failures_detected = 0;

 private:
  std::vector<sim_device> devices_;
  std::vector<device_profile> joined_;  // waiting for the next step
  uint64_t epoch_ = 0;
  uint64_t next_order_ = 1u << 30;
};

// Churn in virtual time: a --churn file's events (step, after_seconds) or
// a seeded rate of events per device-hour, die, hang and join with equal
// odds, aimed at a live device (a join copies a random device's profile).
class churn_feed {
 public:
  churn_feed() = default;
  // From a checked file schedule: events are released step by step.
  explicit churn_feed(churn_schedule file);
  // Poisson events at `per_device_hour` x live devices / 3600 per second.
  churn_feed(double per_device_hour, uint64_t seed);

  // The step begins at `now`: a file's events of that step are queued.
  void begin_step(int64_t step, double now, const sim_fleet& fleet);
  double next_time() const { return queue_.empty() ? std::numeric_limits<double>::infinity() : queue_.top().at; }
  // The next event (after it, a random feed draws the one after).
  timed_churn pop(const sim_fleet& fleet);
  std::priority_queue<timed_churn, std::vector<timed_churn>, std::greater<>>& queue() { return queue_; }

 private:
  void draw_next(double now, const sim_fleet& fleet);

  churn_schedule file_;
  bool from_file_ = false;
  double rate_ = 0;
  rng random_{1};
  bool drawn_ = false;
  uint64_t order_ = 0;
  std::priority_queue<timed_churn, std::vector<timed_churn>, std::greater<>> queue_;
};

}  // namespace cleave
