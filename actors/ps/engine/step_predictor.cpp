#include "actors/ps/engine/step_predictor.hpp"

#include <algorithm>

namespace cleave {

void step_predictor::observe(double step_seconds, double device_wait_seconds,
                             double predicted_device_seconds) {
  if (profiled_) {
    ++totals_.steps;
    totals_.measured_seconds += step_seconds;
    totals_.predicted_seconds += predicted_device_seconds + ps_seconds_;
    totals_.predicted_device_seconds += predicted_device_seconds;
  }
  const double ps_seconds = std::max(0.0, step_seconds - device_wait_seconds);
  ps_seconds_ = profiled_ ? smoothing_ * ps_seconds + (1 - smoothing_) * ps_seconds_ : ps_seconds;
  profiled_ = true;
}

}  // namespace cleave
