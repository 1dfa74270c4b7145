#pragma once
// What this process holds in memory, for reports and logs: benchmarks give
// peak RSS beside step time.

#include <cstdint>

namespace cleave {

// This process's peak resident set so far (VmHWM in /proc/self/status), 0 if unknown.
uint64_t peak_rss_bytes();

}  // namespace cleave
