// Freivalds' test and the reputation it feeds: honest float GEMMs of every
// layout pass (checked against the derived tolerance, not a tuned one),
// corruptions above the tolerance are refused, and strikes quarantine.

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "actors/ps/verify/freivalds.hpp"
#include "actors/ps/verify/mixed_dots.hpp"
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

// The engine prepares op(A)·Σ_t op(B_t)·r_t while it waits, adding the
// tiles' B in their own order; results then come in any order. The verdict
// is the same, and a lie of 1e-2 of its row's scale in one element is seen.
TEST(freivalds, an_expectation_prepared_before_the_results_judges_alike) {
  const tile_case whole(64, 96, 256, true, false, 41);
  const freivalds f;
  const int64_t starts[] = {0, 32, 64};
  auto b_of = [&](int64_t j0) { return stored_block{whole.b.data() + j0, 256, 32, 96, false}; };
  std::array<std::vector<double>, freivalds_probes> y;
  for (auto& v : y) v.assign(256, 0.0);
  for (int64_t j0 : {64, 0, 32}) {  // not the order the results come in
    const auto w = freivalds::window(whole.r, 96, j0);
    const b_digest bd = freivalds::digest_b(b_of(j0), w);
    for (int p = 0; p < freivalds_probes; ++p)
      for (size_t i = 0; i < 256; ++i) y[p][i] += bd.b_r[p][i];
  }
  const a_expectation prepared = freivalds::expect(whole.a_block(), probe_window{y[0].data(), y[1].data()});
  auto sums_of = [&](const std::vector<float>& c) {
    row_sums sums(64, 256);
    for (int64_t j0 : starts) {
      std::vector<float> tile(64 * 32);
      for (int64_t i = 0; i < 64; ++i)
        for (int64_t j = 0; j < 32; ++j) tile[i * 32 + j] = c[i * 96 + j0 + j];
      const auto w = freivalds::window(whole.r, 96, j0);
      sums.add(tile.data(), 32, w, freivalds::digest_b(b_of(j0), w));
    }
    return sums;
  };
  const row_sums honest = sums_of(whole.c);
  const verdict good = f.check(prepared, 256, honest);
  const verdict after = f.check(whole.a_block(), honest);
  EXPECT_TRUE(good.checked);
  EXPECT_TRUE(good.passed) << good.worst_ratio;
  EXPECT_NEAR(good.worst_ratio, after.worst_ratio, 1e-6 + 1e-3 * after.worst_ratio);
  for (int64_t row : {3, 40}) {
    float scale = 0;
    for (int64_t j = 0; j < 96; ++j) scale = std::max(scale, std::fabs(whole.c[row * 96 + j]));
    auto bad = whole.c;
    bad[row * 96 + 50] += 1e-2f * scale;
    const verdict v = f.check(prepared, 256, sums_of(bad));
    EXPECT_FALSE(v.passed) << row;
    EXPECT_EQ(v.worst_row, row);
  }
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

// The check's SIMD loops against plain loops in long double, at every
// length around the vector widths (the tails run the scalar loop).
TEST(mixed_dots, simd_loops_match_plain_loops_at_every_length) {
  std::mt19937_64 g(11);
  std::normal_distribution<double> normal;
  for (int64_t n : {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1027}) {
    std::vector<float> x(static_cast<size_t>(n)), z(x.size()), copy(x.size(), -1.0f);
    std::vector<double> y0(x.size()), y1(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(normal(g));
      z[i] = static_cast<float>(normal(g));
      y0[i] = normal(g);
      y1[i] = normal(g);
    }
    long double e0 = 0, e1 = 0, eabs = 0, esq = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      e0 += static_cast<long double>(x[i]) * y0[i];
      e1 += static_cast<long double>(x[i]) * y1[i];
      eabs += std::fabs(static_cast<long double>(x[i]));
      esq += static_cast<long double>(x[i]) * x[i];
    }
    const double tol = 1e-13 * (1 + static_cast<double>(n));
    double d0 = 0, d1 = 0, third = 0;
    dots_and_magnitude(x.data(), y0.data(), y1.data(), n, d0, d1, third);
    EXPECT_NEAR(d0, static_cast<double>(e0), tol) << n;
    EXPECT_NEAR(d1, static_cast<double>(e1), tol) << n;
    EXPECT_NEAR(third, static_cast<double>(eabs), tol) << n;
    dots_and_magnitude_copy(x.data(), y0.data(), y1.data(), n, d0, d1, third, copy.data());
    EXPECT_EQ(copy, x) << n;
    EXPECT_NEAR(d0, static_cast<double>(e0), tol) << n;
    dots_and_squares(x.data(), y0.data(), y1.data(), n, d0, d1, third);
    EXPECT_NEAR(third, static_cast<double>(esq), tol) << n;
    EXPECT_NEAR(d1, static_cast<double>(e1), tol) << n;
    EXPECT_NEAR(sum_of_squares(x.data(), n), static_cast<double>(esq), tol) << n;

    std::vector<double> out0(x.size(), 0.5), out1(x.size(), -0.25), sq(x.size(), 1.0);
    axpy2(0.75, -1.5, x.data(), out0.data(), out1.data(), sq.data(), n);
    axpy2_two_rows(2.0, 0.125, x.data(), -3.0, 0.5, z.data(), out0.data(), out1.data(), sq.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i], u = z[i];
      EXPECT_NEAR(out0[i], 0.5 + 0.75 * v + 2.0 * v - 3.0 * u, 1e-14) << n << " " << i;
      EXPECT_NEAR(out1[i], -0.25 - 1.5 * v + 0.125 * v + 0.5 * u, 1e-14) << n << " " << i;
      EXPECT_NEAR(sq[i], 1.0 + 2 * v * v + u * u, 1e-13) << n << " " << i;
    }
  }
}
