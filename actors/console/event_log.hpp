#pragma once
// The console's memory of what happened to the fleet: the last `capacity`
// events (joins, suspicions, deaths, rejoins, quarantines, and whatever the
// training loop reports), oldest first. Kept by the console actor rather
// than the page so that a reloaded page still shows the run's history.
// Pure: the actor stamps the times.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cleave {

struct console_event {
  double time = 0;     // seconds since the console started
  std::string kind;    // "join", "suspect", "dead", "rejoin", "quarantined", "drain", "pause",
                       // "paused", "resume", "resumed", "checkpoint", ...
  int32_t device = -1; // -1: not about one device
  double phi = 0;      // the detector's suspicion level when raised (0 if none)
  std::string detail;  // e.g. the step of a checkpoint; empty if none
};

class event_log {
 public:
  explicit event_log(size_t capacity = 500);
  // Adds `ev`, forgetting the oldest event once full.
  void push(console_event ev);
  // Every event kept, oldest first.
  std::vector<console_event> events() const;
  size_t size() const { return count_; }
  size_t capacity() const { return ring_.size(); }
  // Events forgotten to make room: the page says the log is cut.
  uint64_t dropped() const { return dropped_; }

 private:
  std::vector<console_event> ring_;
  size_t next_ = 0;   // where the next event goes
  size_t count_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace cleave
