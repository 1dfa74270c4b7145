#include "actors/detector/delay_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cleave {

void delay_histogram::record(double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // a clock step backwards is no delay
  if (counts.size() != finite_buckets + 1) counts.assign(finite_buckets + 1, 0);
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), seconds);
  ++counts[static_cast<size_t>(it - bounds.begin())];
  ++total;
  sum_seconds += seconds;
}

double delay_histogram::quantile(double q) const {
  if (total == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(total)));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= std::max<uint64_t>(rank, 1))
      return i < finite_buckets ? bounds[i] : std::numeric_limits<double>::infinity();
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace cleave
