#pragma once
// How the PS's streaming passes over a block (keying, copying, the check's
// dots, folding) share the pass threads: a pass reading enough bytes is cut
// into contiguous ranges of rows (or columns), one per thread, each range
// done by the same loop the whole pass would run. Where a range starts is a
// multiple of `align` (a vector loop's width), so every element is treated
// as in the undivided pass and the result keeps its bits. The split is
// plain arithmetic; the thread count is one process-wide setting.

#include <cstdint>
#include <utility>

namespace cleave {

// A pass reading fewer bytes runs whole on its caller's thread: below this
// the fork and join cost a noticeable part of the pass (about 200 us of
// streaming on one core).
inline constexpr double row_parts_min_bytes = 1 << 20;

// The threads a large pass is shared among, process-wide (default 1; the
// PS's --ps-op-threads). Not compute_threads(): where emulated devices or
// device processes share the PS's cores, a second thread of a pass waits
// for a core and the pass ends later, not sooner.
void set_pass_threads(int n);
int pass_threads();

// How many ranges a pass over `units` rows (or columns) reading `bytes`
// bytes is cut into: pass_threads() for a large pass, never more ranges
// than `align`-wide groups of units, and 1 below row_parts_min_bytes.
int row_parts(int64_t units, double bytes, int64_t align = 1);

// Range `part` of `parts`: [first, second), starts at multiples of `align`.
std::pair<int64_t, int64_t> row_part(int64_t units, int parts, int part, int64_t align = 1);

// body(part, begin, end) for each of the `parts` ranges of `units`, one per
// thread when there are several (callers compile with OpenMP, as every
// target that links cleave_kernels does).
template <class Body>
void for_each_part(int parts, int64_t units, int64_t align, Body&& body) {
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
  for (int part = 0; part < parts; ++part) {
    const auto range = row_part(units, parts, part, align);
    body(part, range.first, range.second);
  }
}

}  // namespace cleave
