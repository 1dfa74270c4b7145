#pragma once
// A histogram of delays in fixed buckets (a 1-2-5 series from 10 us to 5 s,
// then everything slower), cheap enough to record one sample per heartbeat
// on the gateway's thread, and what /metrics exports as a Prometheus
// histogram. Quantiles are read back as a bucket's upper bound: coarse (a
// factor of 2 to 2.5), never below the true value.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace cleave {

struct delay_histogram {
  static constexpr size_t finite_buckets = 19;
  // Upper bounds in seconds; bucket finite_buckets is +Inf.
  static constexpr std::array<double, finite_buckets> bounds{
    1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2,
    2e-2, 5e-2, 0.1, 0.2, 0.5, 1, 2, 5, 10};
  std::vector<uint64_t> counts = std::vector<uint64_t>(finite_buckets + 1);
  uint64_t total = 0;
  double sum_seconds = 0;

  void record(double seconds);
  // The upper bound of the bucket holding quantile q (0 < q <= 1); +Inf past
  // the last bound; 0 with no samples.
  double quantile(double q) const;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delay_histogram& x) {
  return f(caf::meta::type_name("delay_histogram"), x.counts, x.total, x.sum_seconds);
}

}  // namespace cleave
