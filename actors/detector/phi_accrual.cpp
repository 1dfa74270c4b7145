#include "actors/detector/phi_accrual.hpp"

#include <algorithm>
#include <cmath>

namespace cleave {

phi_accrual::phi_accrual(double first_interval, double min_stddev, size_t window)
    : min_stddev_(min_stddev), window_(std::max<size_t>(window, 2)) {
  // Two seed samples around the expected interval give a mean and a spread.
  for (double v : {first_interval * 0.75, first_interval * 1.25}) {
    intervals_.push_back(v);
    sum_ += v;
    sum_sq_ += v * v;
  }
}

void phi_accrual::heartbeat(double now) {
  if (last_ >= 0) {
    const double dt = std::max(0.0, now - last_);
    intervals_.push_back(dt);
    sum_ += dt;
    sum_sq_ += dt * dt;
    if (intervals_.size() > window_) {
      const double old = intervals_.front();
      intervals_.pop_front();
      sum_ -= old;
      sum_sq_ -= old * old;
    }
  }
  last_ = now;
}

double phi_accrual::mean_interval() const { return sum_ / static_cast<double>(intervals_.size()); }

double phi_accrual::longest_interval() const {
  return *std::max_element(intervals_.begin(), intervals_.end());
}

double phi_accrual::phi(double now) const {
  if (last_ < 0) return 0;
  const double n = static_cast<double>(intervals_.size());
  const double mean = sum_ / n;
  const double var = std::max(0.0, sum_sq_ / n - mean * mean);
  const double sd = std::max(std::sqrt(var), min_stddev_);
  const double y = (now - last_ - mean) / sd;
  // Logistic approximation of the normal CDF (error < 1e-4), as in Akka.
  const double e = std::exp(-y * (1.5976 + 0.070566 * y * y));
  const double p_later = y > 0 ? e / (1.0 + e) : 1.0 - 1.0 / (1.0 + e);
  return -std::log10(std::max(p_later, 1e-300));
}

}  // namespace cleave
