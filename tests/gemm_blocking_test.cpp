// The GEMM's bits must not depend on the host's caches: Eigen's blocking is
// pinned (kernels/gemm.cpp) before any test runs, and other cache sizes
// would give another summation order.

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/gemm.hpp"

namespace cleave {
namespace {

std::vector<float> product(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                           int64_t k, int64_t n) {
  std::vector<float> c(static_cast<size_t>(m * n));
  gemm_local<float>({a.data(), m, k, k}, false, {b.data(), k, n, n}, false, {c.data(), m, n, n}, 0.f);
  return c;
}

TEST(gemm_blocking, eigen_sizes_its_blocks_from_the_pinned_caches) {
  EXPECT_EQ(Eigen::l1CacheSize(), gemm_blocking_caches.l1);
  EXPECT_EQ(Eigen::l2CacheSize(), gemm_blocking_caches.l2);
  EXPECT_EQ(Eigen::l3CacheSize(), gemm_blocking_caches.l3);
}

TEST(gemm_blocking, other_caches_would_change_the_bits_of_a_long_reduction) {
  set_gemm_threads(1);  // as on a device
  constexpr int64_t m = 128, k = 4096, n = 128;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> a(m * k), b(k * n);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  const auto pinned = product(a, b, m, k, n);
  Eigen::setCpuCacheSizes(32 << 10, 512 << 10, 32 << 20);  // a typical AMD EPYC core's share
  const auto other = product(a, b, m, k, n);
  Eigen::setCpuCacheSizes(gemm_blocking_caches.l1, gemm_blocking_caches.l2, gemm_blocking_caches.l3);
  const auto again = product(a, b, m, k, n);
  EXPECT_NE(std::memcmp(pinned.data(), other.data(), pinned.size() * sizeof(float)), 0)
      << "the K blocking no longer depends on the caches: the pinning may be unnecessary";
  EXPECT_EQ(std::memcmp(pinned.data(), again.data(), pinned.size() * sizeof(float)), 0);
  set_gemm_threads(compute_threads());
}

}  // namespace
}  // namespace cleave
