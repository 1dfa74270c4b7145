#pragma once
// A portable seeded generator. std::normal_distribution and friends are not
// specified bit-for-bit across standard libraries, and a seed must give the
// same initialisation and data order on every node and every build.

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/tensor.hpp"

namespace cleave {

// splitmix64: tiny, fast, and good enough for initialisation and shuffling.
class rng {
 public:
  explicit rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0 (Lemire's method without the rejection
  // step; the bias is below 2^-32 for the sizes used here).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Standard normal (Box-Muller, one value per call for simplicity).
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Derives independent streams (per parameter, per epoch) from one seed.
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  rng r(seed ^ (stream * 0xd1b54a32d192ed03ULL));
  return r.next();
}

template <class T>
void fill_normal(basic_tensor<T>& t, double stddev, rng& r) {
  for (int64_t i = 0; i < t.size(); ++i) t[i] = static_cast<T>(r.normal() * stddev);
}

template <class T>
void fill_constant(basic_tensor<T>& t, T value) {
  for (int64_t i = 0; i < t.size(); ++i) t[i] = value;
}

// A Fisher-Yates permutation of [0, n).
inline std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  rng r(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(r.below(static_cast<uint64_t>(i + 1)));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

}  // namespace cleave
