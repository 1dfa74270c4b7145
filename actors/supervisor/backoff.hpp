#pragma once
// How long to wait before trying again after a failure: `first`, then
// `factor` times longer each time, never more than `most`. A success resets
// it, so that one failure after a long healthy run is retried at once, and a
// peer that stays away is not hammered.

#include <algorithm>

namespace cleave {

class backoff {
 public:
  backoff(double first, double factor, double most) : first_(first), factor_(factor), most_(most) {}

  // The wait before the next attempt (seconds); each call counts one failure.
  double next() {
    double wait = first_;
    for (int i = 0; i < failures_ && wait < most_; ++i) wait *= factor_;
    ++failures_;
    return std::min(wait, most_);
  }
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  double first_, factor_, most_;
  int failures_ = 0;
};

}  // namespace cleave
