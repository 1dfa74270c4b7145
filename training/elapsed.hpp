#pragma once
// Wall time as the PS accounts it: a monotonic clock, seconds as double.

#include <chrono>

namespace cleave {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

}  // namespace cleave
