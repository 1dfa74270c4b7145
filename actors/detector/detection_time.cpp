#include "actors/detector/detection_time.hpp"

#include <algorithm>

#include "actors/detector/phi_accrual.hpp"

namespace cleave {

double detection_seconds(const detector_options& opts) {
  phi_accrual level(opts.heartbeat_seconds, opts.min_stddev);
  constexpr int beats = 200;  // fills the window with the regular rhythm
  for (int i = 0; i <= beats; ++i) level.heartbeat(i * opts.heartbeat_seconds);
  const double last = beats * opts.heartbeat_seconds;
  // Bisection on the silence: phi grows with it.
  double lo = 0, hi = opts.heartbeat_seconds;
  while (level.phi(last + hi) < opts.suspect_phi) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (level.phi(last + mid) >= opts.suspect_phi ? hi : lo) = mid;
  }
  return std::max(0.0, hi - 0.5 * opts.heartbeat_seconds) + 0.5 * opts.check_seconds;
}

}  // namespace cleave
