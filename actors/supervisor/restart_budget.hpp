#pragma once
// OTP-style restart intensity: at most `max_restarts` within any window of
// `window_seconds`. Past that, a supervisor stops restarting and escalates.

#include <deque>

namespace cleave {

class restart_budget {
 public:
  restart_budget(int max_restarts, double window_seconds)
      : max_(max_restarts), window_(window_seconds) {}

  // Records a restart at `now` if the budget allows it.
  bool try_restart(double now) {
    while (!times_.empty() && now - times_.front() > window_) times_.pop_front();
    if (static_cast<int>(times_.size()) >= max_) return false;
    times_.push_back(now);
    return true;
  }

 private:
  int max_;
  double window_;
  std::deque<double> times_;
};

}  // namespace cleave
