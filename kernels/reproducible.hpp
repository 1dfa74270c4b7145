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

}  // namespace cleave::detail
