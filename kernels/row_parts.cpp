#include "kernels/row_parts.hpp"

#include <algorithm>
#include <atomic>

namespace cleave {

namespace {
std::atomic<int> g_pass_threads{1};
}  // namespace

void set_pass_threads(int n) { g_pass_threads.store(std::max(1, n), std::memory_order_relaxed); }

int pass_threads() { return g_pass_threads.load(std::memory_order_relaxed); }

int row_parts(int64_t units, double bytes, int64_t align) {
  if (!(bytes >= row_parts_min_bytes) || units <= 0) return 1;
  const int64_t groups = (units + align - 1) / align;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(pass_threads(), groups)));
}

std::pair<int64_t, int64_t> row_part(int64_t units, int parts, int part, int64_t align) {
  const int64_t groups = (units + align - 1) / align;
  const int64_t g0 = groups * part / parts, g1 = groups * (part + 1) / parts;
  return {std::min(units, g0 * align), std::min(units, g1 * align)};
}

}  // namespace cleave
