#pragma once
// A PS link (a shard's egress or ingress) shared by the transfers running
// through it, in virtual time: max-min fair sharing. Each flow is also
// limited by its own cap (the device's downlink or uplink); the link's
// capacity is divided equally among the flows its cap does not limit
// (water-filling: a flow gets min(cap, level), where the levels add up to
// the capacity, or every flow runs at its cap when they fit).
//
// Exact and cheap: the flows the level limits all get the same rate, so
// their progress is one number, the service each has received since the
// start (served_); such a flow finishes when served_ reaches its own
// finish mark. Flows running at their cap have a fixed finish time. A flow
// moves between the two sets only when the level crosses its cap. Every
// operation is O(log flows) and allocates nothing.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "actors/simulator/indexed_heap.hpp"

namespace cleave {

class shared_link {
 public:
  // Flows are named 0..max_flows-1 (one per device); `capacity` in bytes/s.
  shared_link(double capacity, size_t max_flows);

  // A transfer of `bytes` for `flow` (not running) starts at `now`, at most
  // `cap` bytes/s.
  void start(double now, uint32_t flow, double bytes, double cap);
  // The flow stops at `now` unfinished (its device died).
  void cancel(double now, uint32_t flow);
  bool running(uint32_t flow) const { return shared_finish_.contains(flow) || own_finish_.contains(flow); }
  size_t active() const { return shared_finish_.size() + own_finish_.size(); }

  // When the next flow finishes, if nothing starts or stops before then.
  double next_finish() const;
  // Flows finished by `now` leave the link and are appended to `done`.
  void finish_due(double now, std::vector<uint32_t>& done);

  double capacity() const { return capacity_; }
  // Each flow's rate now (bytes/s): for tests.
  double rate(uint32_t flow) const;

 private:
  void advance(double now);
  void rebalance(double now);
  double level() const;
  void to_own(double now, uint32_t flow);
  void to_shared(double now, uint32_t flow);

  double capacity_;
  double at_ = 0;      // time served_ was brought up to
  double served_ = 0;  // bytes each level-limited flow received since time 0
  double own_sum_ = 0; // sum of the caps of flows running at their cap
  std::vector<double> cap_;
  std::vector<double> size_;  // bytes of the flow's transfer (for the finish tolerance)
  indexed_heap shared_finish_;  // level-limited flows, by the served_ mark they finish at
  indexed_heap shared_cap_;     // ... by cap (smallest first)
  indexed_heap own_finish_;     // capped flows, by finish time
  indexed_heap own_cap_;        // ... by -cap (largest first)
};

}  // namespace cleave
