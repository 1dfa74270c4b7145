#pragma once
// A PS link whose sender decides who goes first (--ps-link-model=scheduled):
// transfers are served by priority (the tile's place in its plan, which is
// the order the planner's assignment counted the PS's bytes in), each at its
// own cap (the device's downlink) while the link has capacity left, the
// first one that does not fit taking what is left and the rest waiting. A
// device's operands therefore arrive early and whole, in the order the plan
// needs them, and it computes while the others' cross, where max-min fair
// sharing (shared_link.hpp) would let every download crawl to the same late
// end. It is what a PS does that writes its task queue to a few sockets at
// a time, in plan order.
//
// Cost: only the served prefix moves, so each start, cancel or finish
// touches the flows being served (the link's capacity over a device's
// downlink: 12 to 125 at 10 to 100 Gbit/s and 100 MB/s), plus O(log flows)
// to keep the waiting ones in order.

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace cleave {

class scheduled_link {
 public:
  // Flows are named 0..max_flows-1 (one per device); `capacity` in bytes/s.
  scheduled_link(double capacity, size_t max_flows);

  // A transfer of `bytes` for `flow` (not running) joins at `now`, served at
  // most at `cap` bytes/s, before every flow of a larger `priority` (ties:
  // the one that came first).
  void start(double now, uint32_t flow, double bytes, double cap, uint64_t priority);
  // The flow stops at `now` unfinished (its device died).
  void cancel(double now, uint32_t flow);
  bool running(uint32_t flow) const { return flows_[flow].queued; }
  size_t active() const { return order_.size(); }

  // When the next flow finishes, if nothing starts or stops before then.
  double next_finish() const;
  // Flows finished by `now` leave the link and are appended to `done`.
  void finish_due(double now, std::vector<uint32_t>& done);

  double capacity() const { return capacity_; }
  // Each flow's rate now (bytes/s): for tests.
  double rate(uint32_t flow) const { return flows_[flow].queued ? flows_[flow].rate : 0; }

 private:
  struct flow_state {
    double left = 0;  // bytes, as of at_
    double size = 0;
    double cap = 0;
    double rate = 0;
    bool queued = false;
    std::pair<uint64_t, uint64_t> key;  // (priority, arrival)
  };
  void advance(double now);
  void allocate();
  void remove(uint32_t flow);

  double capacity_;
  double at_ = 0;
  uint64_t arrivals_ = 0;
  std::vector<flow_state> flows_;
  // Running flows by (priority, arrival, flow); the first ones hold the rate.
  std::set<std::tuple<uint64_t, uint64_t, uint32_t>> order_;
  std::vector<uint32_t> served_;  // flows with a rate, in order
};

}  // namespace cleave
