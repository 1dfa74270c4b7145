// Freivalds' test and the reputation it feeds: honest float GEMMs of every
// layout pass (checked against the derived tolerance, not a tuned one),
// corruptions above the tolerance are refused, and strikes quarantine.

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "actors/ps/verify/freivalds.hpp"
#include "actors/ps/verify/reputation.hpp"
#include "kernels/gemm.hpp"
#include "kernels/random.hpp"
#include "kernels/tensor.hpp"

using namespace cleave;

namespace {

tensor random_matrix(int64_t r, int64_t c, uint64_t seed, double mean = 0) {
  tensor t(r, c);
  rng g(seed);
  fill_normal(t, 1.0, g);
  for (int64_t i = 0; i < t.size(); ++i) t[i] += static_cast<float>(mean);
  return t;
}

// One tile's product, as a device computes it, and everything the check needs.
struct tile_case {
  tensor a, b;  // stored operands
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  std::vector<float> c;
  std::vector<double> r;
  a_digest ad;  // for the element tolerance
  b_digest bd;

  stored_block a_block() const { return {a.data(), a.rows(), a.cols(), a.cols(), ta}; }
  stored_block b_block() const { return {b.data(), b.rows(), b.cols(), b.cols(), tb}; }

  tile_case(int64_t m_, int64_t n_, int64_t k_, bool ta_, bool tb_, uint64_t seed, double mean = 0,
            int threads = 1)
      : a(ta_ ? random_matrix(k_, m_, seed, mean) : random_matrix(m_, k_, seed, mean)),
        b(tb_ ? random_matrix(n_, k_, seed + 1, mean) : random_matrix(k_, n_, seed + 1, mean)),
        ta(ta_), tb(tb_), m(m_), n(n_), k(k_) {
    c.assign(static_cast<size_t>(m * n), 0.0f);
    set_gemm_threads(threads);
    gemm_local<float>(a.view(), ta, b.view(), tb, {c.data(), m, n, n}, 0.0f);
    set_gemm_threads(1);
    std::mt19937_64 secret(seed * 7 + 3);
    r = freivalds::draw_probes(n, secret);
    ad = freivalds::digest_a(a_block());
    bd = freivalds::digest_b(b_block(), window());
  }

  probe_window window() const { return freivalds::window(r, n, 0); }
  verdict check(const std::vector<float>& result, const freivalds& f = freivalds{}) const {
    return f.check(result.data(), m, n, a_block(), bd, window());
  }
  // The larger of the probes' rounding bounds for row i.
  double tolerance(int64_t i, const freivalds& f = freivalds{}) const {
    double tol = 0;
    for (double w2 : bd.weighted2)
      tol = std::max(tol, f.row_tolerance(k, ad.row_norms[static_cast<size_t>(i)], std::sqrt(w2)));
    return tol;
  }
};

}  // namespace

TEST(freivalds, honest_products_of_every_layout_pass) {
  uint64_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [m, n, k] : {std::tuple{1, 1, 1}, {7, 5, 3}, {64, 48, 200}, {33, 129, 1024}}) {
        const tile_case t(m, n, k, ta, tb, seed++);
        const verdict v = t.check(t.c);
        EXPECT_TRUE(v.checked);
        EXPECT_TRUE(v.passed) << m << "x" << n << "x" << k << " ta=" << ta << " tb=" << tb
                              << ": row " << v.worst_row << " at " << v.worst_ratio;
      }
}

TEST(freivalds, honest_products_sit_far_below_the_tolerance) {
  // Long sums with a shared sign (large partial sums: the worst case for
  // rounding) and a multi-threaded GEMM (another blocking): the derived
  // bound holds with room to spare, which is what makes false alarms rare.
  for (auto [mean, threads] : {std::pair{0.0, 1}, {3.0, 1}, {0.0, 2}, {3.0, 2}}) {
    const tile_case t(96, 80, 4096, false, true, 11, mean, threads);
    const verdict v = t.check(t.c);
    ASSERT_TRUE(v.passed) << "mean " << mean;
    EXPECT_LT(v.worst_ratio, 0.25) << "mean " << mean << " threads " << threads;
  }
}

TEST(freivalds, a_corruption_above_the_row_tolerance_is_refused) {
  const tile_case t(64, 64, 512, false, false, 5);
  const freivalds f;
  for (int64_t i : {int64_t{0}, int64_t{17}, int64_t{63}}) {
    const double tol = t.tolerance(i, f);
    for (int64_t j : {int64_t{0}, int64_t{40}}) {
      auto bad = t.c;
      bad[static_cast<size_t>(i * t.n + j)] += static_cast<float>(1.5 * tol);
      const verdict v = t.check(bad);
      EXPECT_FALSE(v.passed) << i << "," << j;
      EXPECT_EQ(v.worst_row, i);
    }
  }
}

TEST(freivalds, every_kind_of_wrong_result_is_refused) {
  const tile_case t(48, 40, 256, true, false, 9);
  auto scaled = t.c;
  for (auto& x : scaled) x *= 1.01f;
  auto row = t.c;
  for (int64_t j = 0; j < t.n; ++j) row[static_cast<size_t>(5 * t.n + j)] = 0;
  auto nan = t.c;
  nan[3] = std::nanf("");
  auto inf = t.c;
  inf[3] = INFINITY;
  const tile_case other(48, 40, 256, true, false, 99);  // another step's operands
  const std::vector<const std::vector<float>*> wrong{&scaled, &row, &nan, &inf, &other.c};
  for (const auto* bad : wrong) EXPECT_FALSE(t.check(*bad).passed);
}

TEST(freivalds, operands_that_overflowed_are_not_judged) {
  tile_case t(8, 8, 16, false, false, 2);
  t.a[3] = INFINITY;
  EXPECT_FALSE(t.check(t.c).checked);
}

TEST(freivalds, tiles_sharing_a_block_of_a_are_checked_together) {
  // op(A) (64 x 256) times op(B) (256 x 96), cut into three column tiles.
  const tile_case whole(64, 96, 256, true, false, 31);
  const freivalds f;
  auto sums_of = [&](const std::vector<float>& c) {
    row_sums sums(64, 256);
    for (int64_t j0 : {0, 32, 64}) {
      std::vector<float> tile(64 * 32);
      for (int64_t i = 0; i < 64; ++i)
        for (int64_t j = 0; j < 32; ++j) tile[i * 32 + j] = c[i * 96 + j0 + j];
      const stored_block b{whole.b.data() + j0, 256, 32, 96, false};
      const auto w = freivalds::window(whole.r, 96, j0);
      sums.add(tile.data(), 32, w, freivalds::digest_b(b, w));
    }
    return sums;
  };
  const verdict good = f.check(whole.a_block(), sums_of(whole.c));
  EXPECT_TRUE(good.checked);
  EXPECT_TRUE(good.passed) << good.worst_ratio;
  auto bad = whole.c;
  bad[10 * 96 + 70] += 1.0f;  // in the third tile
  const verdict v = f.check(whole.a_block(), sums_of(bad));
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.worst_row, 10);
}

TEST(freivalds, the_probes_are_balanced_bounded_and_differ_between_draws) {
  std::mt19937_64 g(1);
  const auto r1 = freivalds::draw_probes(10000, g);
  const auto r2 = freivalds::draw_probes(10000, g);
  ASSERT_EQ(r1.size(), size_t{freivalds_probes} * 10000);
  int negative = 0, same = 0;
  for (size_t i = 0; i < r1.size(); ++i) {
    ASSERT_GE(std::abs(r1[i]), 1.0);
    ASSERT_LT(std::abs(r1[i]), 2.0);
    negative += r1[i] < 0;
    same += r1[i] == r2[i];
  }
  EXPECT_NEAR(negative, 10000, 600);  // 4 sigma
  EXPECT_EQ(same, 0);
}

TEST(freivalds, a_row_moved_evenly_is_refused_every_time) {
  // Every element of one row moved by the same amount: with probes of
  // signs alone the moves cancel in one draw of eight here (n = 42).
  const tile_case t(32, 42, 128, false, false, 41);
  const freivalds f;
  std::mt19937_64 g(5);
  int passed = 0;
  for (int draw = 0; draw < 2000; ++draw) {
    const auto r = freivalds::draw_probes(t.n, g);
    const auto w = freivalds::window(r, t.n, 0);
    const b_digest bd = freivalds::digest_b(t.b_block(), w);
    auto bad = t.c;
    for (int64_t j = 0; j < t.n; ++j) bad[static_cast<size_t>(9 * t.n + j)] += 1.0f;
    passed += f.check(bad.data(), t.m, t.n, t.a_block(), bd, w).passed;
  }
  EXPECT_EQ(passed, 0);
}

TEST(freivalds, two_honest_copies_agree_and_a_small_change_is_seen) {
  // Another thread count blocks the GEMM differently: a second honest copy
  // with other rounding.
  const tile_case t(64, 48, 1024, false, true, 21, 0, 1);
  const tile_case u(64, 48, 1024, false, true, 21, 0, 2);
  const freivalds f;
  EXPECT_EQ(f.first_disagreement(t.c.data(), u.c.data(), t.m, t.n, t.k, t.ad, t.bd), -1);
  // An element moved by 1% of itself: under the row tolerance here, over
  // the element tolerance.
  auto bad = u.c;
  const size_t at = 7 * 48 + 3;
  bad[at] *= 1.01f;
  const double row_tol = t.tolerance(7, f);
  EXPECT_LT(std::abs(bad[at] - u.c[at]), row_tol) << "the case should be one Freivalds cannot see";
  EXPECT_EQ(f.first_disagreement(t.c.data(), bad.data(), t.m, t.n, t.k, t.ad, t.bd),
            static_cast<int64_t>(at));
}

TEST(reputation, strikes_quarantine_once_and_good_results_forgive) {
  reputation r({3, 10});
  EXPECT_FALSE(r.failed(1));
  EXPECT_FALSE(r.failed(1));
  for (int i = 0; i < 10; ++i) r.passed(1);  // forgives one
  EXPECT_EQ(r.strikes(1), 1);
  EXPECT_FALSE(r.failed(1));
  EXPECT_TRUE(r.failed(1));  // the third strike standing
  EXPECT_TRUE(r.quarantined(1));
  EXPECT_FALSE(r.failed(1)) << "quarantined once";
  EXPECT_FALSE(r.quarantined(2));
  EXPECT_EQ(r.strikes(2), 0);
}
