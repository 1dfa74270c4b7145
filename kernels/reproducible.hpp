#pragma once
// Building blocks that make the kernels' results independent of where
// buffers sit in memory and of how many threads run.
//
// Eigen peels unaligned leading elements of a Map into scalar code (a
// different exp or tanh, a different summation order), so results would
// depend on buffer addresses. Vectorised transcendental functions therefore
// run on a 64-byte aligned block padded to whole packets, and sums use fixed
// lanes combined in a fixed order.

#include <algorithm>
#include <cstdint>

#include <Eigen/Core>

namespace cleave::detail {

constexpr int64_t aligned_block = 256;  // elements of one aligned scratch block

template <class T>
using aligned_map = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Aligned64>;

// Length rounded up to whole 16-element packets.
inline int64_t padded(int64_t l) { return (l + 15) / 16 * 16; }

// out[i] = exp((x[i] - mx) * scale) for i < n (out may be x); returns the sum.
template <class T>
T exp_sum(const T* x, T* out, int64_t n, T mx, T scale) {
  alignas(64) T buf[aligned_block];
  T total = 0;
  for (int64_t o = 0; o < n; o += aligned_block) {
    const int64_t l = std::min(aligned_block, n - o), lp = padded(l);
    std::copy(x + o, x + o + l, buf);
    std::fill(buf + l, buf + lp, mx);
    aligned_map<T> b(buf, lp);
    b = ((b - mx) * scale).exp();
    std::fill(buf + l, buf + lp, T(0));
    total += b.sum();
    std::copy(buf, buf + l, out + o);
  }
  return total;
}

// sum_{i<n} f(i) over 16 fixed lanes combined in a fixed tree.
template <class A, class F>
A lane_sum(int64_t n, F&& f) {
  constexpr int L = 16;
  A acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) acc[j] += f(i + j);
  for (int j = 0; i + j < n; ++j) acc[j] += f(i + j);
  for (int w = L / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

// The sum over [0, n) of chunk_sum(begin, end) on fixed chunks of at least
// min_chunk (at most 256 chunks, however many threads run), each summed on
// one thread and the chunks combined in order: the same bits on any number
// of threads. `parallel` says whether the work is worth a parallel region.
template <class F>
double ordered_chunk_sum(int64_t n, int64_t min_chunk, int threads, bool parallel, F&& chunk_sum) {
  if (n <= 0) return 0.0;
  constexpr int64_t max_chunks = 256;
  const int64_t chunk = std::max<int64_t>(min_chunk, (n + max_chunks - 1) / max_chunks);
  const int64_t chunks = (n + chunk - 1) / chunk;
  double partial[max_chunks];
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel && chunks > 1)
  for (int64_t ic = 0; ic < chunks; ++ic)
    partial[ic] = chunk_sum(ic * chunk, std::min(n, (ic + 1) * chunk));
  double total = 0;
  for (int64_t ic = 0; ic < chunks; ++ic) total += partial[ic];
  return total;
}

}  // namespace cleave::detail
