#pragma once
// Phi-accrual suspicion (Hayashibara et al., as in Akka and Cassandra): phi
// is -log10 of the probability that a heartbeat this late still arrives,
// under a normal model of the observed inter-arrival times. A slow but
// regular device keeps a low phi; a silent one's phi grows without bound.
// Plain arithmetic on timestamps (seconds), so tests drive it directly.

#include <cstddef>
#include <deque>

namespace cleave {

class phi_accrual {
 public:
  // first_interval seeds the window so phi is meaningful from the start;
  // min_stddev keeps a perfectly regular sender from looking infinitely
  // suspicious after a tiny delay.
  phi_accrual(double first_interval, double min_stddev, size_t window = 100);

  void heartbeat(double now);
  double phi(double now) const;
  double last_heartbeat() const { return last_; }
  double mean_interval() const;
  // The longest interval in the window: how long a silence this device's
  // link has already shown and recovered from. O(window), so callers ask
  // only when about to declare a death.
  double longest_interval() const;

 private:
  double min_stddev_;
  size_t window_;
  std::deque<double> intervals_;
  double sum_ = 0;
  double sum_sq_ = 0;
  double last_ = -1;
};

}  // namespace cleave
