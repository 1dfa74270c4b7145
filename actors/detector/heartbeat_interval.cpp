#include "actors/detector/heartbeat_interval.hpp"

#include <algorithm>

namespace cleave {

double fleet_heartbeat_seconds(double base_seconds, size_t max_devices, double rate) {
  if (!(rate > 0)) return base_seconds;
  const double spread = static_cast<double>(max_devices) / rate;
  return std::max(base_seconds, std::min(spread, max_heartbeat_seconds));
}

double fleet_heartbeat_rate(double interval_seconds, size_t max_devices) {
  return interval_seconds > 0 ? static_cast<double>(max_devices) / interval_seconds : 0;
}

detector_options detector_for_interval(detector_options base, double interval_seconds) {
  base.heartbeat_seconds = interval_seconds;
  base.min_stddev = std::max(base.min_stddev, min_stddev_fraction * interval_seconds);
  return base;
}

}  // namespace cleave
