#pragma once
// A whole step's predicted time. The cost model predicts what depends on the
// fleet: how long the PS waits on devices for the step's distributed GEMMs.
// The PS's own work (GEMMs it keeps, row-wise ops, issuing tiles, the
// optimizer) does not depend on the fleet, so it is profiled instead: its
// time on the steps before, smoothed. A step is predicted only from what came
// before it; the first step has no profile and is not compared.

#include <cstdint>

namespace cleave {

class step_predictor {
 public:
  // Sums over the compared steps.
  struct totals {
    int64_t steps = 0;
    double measured_seconds = 0;
    double predicted_seconds = 0;
    double predicted_device_seconds = 0;  // the cost model's part of the prediction
  };

  // smoothing: the weight of the newest step in the PS profile, in (0, 1].
  explicit step_predictor(double smoothing = 0.3) : smoothing_(smoothing) {}

  // One finished step: its wall time, the part of it spent waiting on
  // devices, and the cost model's prediction of that wait.
  void observe(double step_seconds, double device_wait_seconds, double predicted_device_seconds);

  const totals& compared() const { return totals_; }
  bool profiled() const { return profiled_; }
  double ps_profile_seconds() const { return ps_seconds_; }

 private:
  double smoothing_;
  bool profiled_ = false;
  double ps_seconds_ = 0;
  totals totals_;
};

}  // namespace cleave
