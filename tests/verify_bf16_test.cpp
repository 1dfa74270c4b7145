// Freivalds' test with bf16 on the wire (actors/ps/verify/freivalds.hpp):
// the PS checks against the operands it sent, rounded to bf16, and a bf16
// result against its fp32 tolerance plus the rounding term derived there.
// Honest tiles always pass (many shapes, seeds and magnitudes spread over
// six decades); a liar is refused; and the detection rate of one element
// moved by a fraction of its row's scale is measured for fp32 results, for
// bf16 operands with fp32 results and for bf16 both ways, on a grid of
// quarter decades, and compared with what the derivation predicts.
//
// A row's scale, here: the largest magnitude in the row of the honest
// result, max_j |c_ij|.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "actors/ps/verify/freivalds.hpp"
#include "kernels/bf16.hpp"
#include "kernels/gemm.hpp"
#include "kernels/random.hpp"
#include "kernels/tensor.hpp"

using namespace cleave;

namespace {

// rows x cols normal values; with `skew`, each row (or column) scaled by
// 10^U(-3, 3), so a tile mixes magnitudes six decades apart.
tensor random_matrix(int64_t rows, int64_t cols, uint64_t seed, bool skew_rows, bool skew_cols) {
  tensor t(rows, cols);
  rng g(seed);
  fill_normal(t, 1.0, g);
  std::vector<double> rs(static_cast<size_t>(rows), 1.0), cs(static_cast<size_t>(cols), 1.0);
  if (skew_rows) for (auto& s : rs) s = std::pow(10.0, 6 * g.uniform() - 3);
  if (skew_cols) for (auto& s : cs) s = std::pow(10.0, 6 * g.uniform() - 3);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t[i * cols + j] = static_cast<float>(t[i * cols + j] * rs[static_cast<size_t>(i)] * cs[static_cast<size_t>(j)]);
  return t;
}

void round_all(tensor& t) { round_bf16(t.data(), t.data(), static_cast<size_t>(t.size())); }

// A tile as the PS sends it and an honest device answers: operands rounded
// to bf16 (or not), the product in fp32, the result rounded (or not).
struct wire_tile {
  tensor a, b;
  bool ta, tb;
  int64_t m, n, k;
  wire_precision results;
  std::vector<float> c;

  wire_tile(int64_t m_, int64_t n_, int64_t k_, bool ta_, bool tb_, uint64_t seed, bool skew,
            wire_precision operands, wire_precision results_)
      : a(ta_ ? random_matrix(k_, m_, seed, false, skew) : random_matrix(m_, k_, seed, skew, false)),
        b(tb_ ? random_matrix(n_, k_, seed + 1, skew, false) : random_matrix(k_, n_, seed + 1, false, skew)),
        ta(ta_), tb(tb_), m(m_), n(n_), k(k_), results(results_) {
    if (operands == wire_precision::bf16) {
      round_all(a);
      round_all(b);
    }
    c.assign(static_cast<size_t>(m * n), 0.0f);
    gemm_local<float>(a.view(), ta, b.view(), tb, {c.data(), m, n, n}, 0.0f);
    if (results == wire_precision::bf16) round_bf16(c.data(), c.data(), c.size());
  }
  stored_block a_block() const { return {a.data(), a.rows(), a.cols(), a.cols(), ta}; }
  stored_block b_block() const { return {b.data(), b.rows(), b.cols(), b.cols(), tb}; }

  // `result` checked under fresh probes from g.
  verdict check(const std::vector<float>& result, std::mt19937_64& g) const {
    const auto r = freivalds::draw_probes(n, g);
    const auto w = freivalds::window(r, n, 0);
    return freivalds{}.check(result.data(), m, n, a_block(), freivalds::digest_b(b_block(), w), w, 0, results);
  }
  double row_scale(int64_t i) const {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s = std::max(s, std::fabs(static_cast<double>(c[static_cast<size_t>(i * n + j)])));
    return s;
  }
  // The liar's answer: element (i, j) moved by `by`, as it crosses the wire.
  std::vector<float> moved(int64_t i, int64_t j, double by) const {
    auto bad = c;
    float& x = bad[static_cast<size_t>(i * n + j)];
    x = static_cast<float>(x + by);
    if (results == wire_precision::bf16) x = round_bf16(x);
    return bad;
  }
};

struct shape {
  int64_t m, n, k;
  bool ta, tb;
};

}  // namespace

TEST(freivalds_bf16, honest_tiles_always_pass) {
  const shape shapes[] = {{64, 128, 512, false, false}, {64, 128, 512, true, false}, {64, 512, 128, false, true},
                          {33, 129, 1024, true, true},  {128, 64, 4096, false, true}, {1, 1, 1, false, false}};
  std::mt19937_64 g(17);
  uint64_t seed = 100;
  int checked = 0;
  double worst = 0;
  for (auto results : {wire_precision::fp32, wire_precision::bf16})
    for (const auto& s : shapes)
      for (bool skew : {false, true})
        for (int rep = 0; rep < 12; ++rep) {
          const wire_tile t(s.m, s.n, s.k, s.ta, s.tb, seed++, skew, wire_precision::bf16, results);
          for (int draw = 0; draw < 4; ++draw) {
            const verdict v = t.check(t.c, g);
            ASSERT_TRUE(v.checked);
            ASSERT_TRUE(v.passed) << s.m << "x" << s.n << "x" << s.k << " skew " << skew << " results "
                                  << to_string(results) << ": row " << v.worst_row << " at " << v.worst_ratio;
            worst = std::max(worst, v.worst_ratio);
            ++checked;
          }
        }
  std::printf("%d honest checks of bf16 operands (fp32 and bf16 results): the largest |d|/tolerance %.3f\n",
              checked, worst);
  // The bound is a tail bound at lambda = 8: honest tiles sit well inside it.
  EXPECT_LT(worst, 0.5);
}

TEST(freivalds_bf16, a_bf16_result_needs_the_rounding_term) {
  // Checked as if it were fp32, an honest bf16 result fails: the rounding
  // term is what the derivation adds, not slack.
  const wire_tile t(64, 128, 512, false, false, 3, false, wire_precision::bf16, wire_precision::bf16);
  std::mt19937_64 g(1);
  const auto r = freivalds::draw_probes(t.n, g);
  const auto w = freivalds::window(r, t.n, 0);
  const auto bd = freivalds::digest_b(t.b_block(), w);
  EXPECT_FALSE(freivalds{}.check(t.c.data(), t.m, t.n, t.a_block(), bd, w, 0, wire_precision::fp32).passed);
  EXPECT_TRUE(freivalds{}.check(t.c.data(), t.m, t.n, t.a_block(), bd, w, 0, wire_precision::bf16).passed);
}

TEST(freivalds_bf16, tiles_checked_together_sum_their_rounding) {
  // op(A) (64 x 256) times op(B) (256 x 96) in three column tiles, bf16 results.
  const wire_tile whole(64, 96, 256, true, false, 31, true, wire_precision::bf16, wire_precision::bf16);
  std::mt19937_64 g(2);
  const auto r = freivalds::draw_probes(96, g);
  auto sums_of = [&](const std::vector<float>& c) {
    row_sums sums(64, 256, wire_precision::bf16);
    for (int64_t j0 : {0, 32, 64}) {
      std::vector<float> tile(64 * 32);
      for (int64_t i = 0; i < 64; ++i)
        for (int64_t j = 0; j < 32; ++j) tile[static_cast<size_t>(i * 32 + j)] = c[static_cast<size_t>(i * 96 + j0 + j)];
      const stored_block b{whole.b.data() + j0, 256, 32, 96, false};
      const auto w = freivalds::window(r, 96, j0);
      EXPECT_TRUE(sums.add(tile.data(), 32, w, freivalds::digest_b(b, w)));
    }
    return sums;
  };
  const verdict good = freivalds{}.check(whole.a_block(), sums_of(whole.c));
  EXPECT_TRUE(good.checked);
  EXPECT_TRUE(good.passed) << good.worst_ratio;
  // Row 10 moved by its whole scale in the third tile: refused, in that row.
  const verdict bad = freivalds{}.check(whole.a_block(), sums_of(whole.moved(10, 70, whole.row_scale(10))));
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.worst_row, 10);
}

TEST(freivalds_bf16, two_honest_bf16_copies_agree_and_a_changed_element_is_seen) {
  // Two devices that sum in another order round to neighbouring bf16 values
  // now and then: the element tolerance allows both half ulps.
  const wire_tile t(64, 48, 1024, false, true, 21, false, wire_precision::bf16, wire_precision::bf16);
  tensor a = t.a, b = t.b;
  std::vector<float> other(static_cast<size_t>(t.m * t.n));
  set_gemm_threads(2);  // another blocking: another summation order
  gemm_local<float>(a.view(), false, b.view(), true, {other.data(), t.m, t.n, t.n}, 0.0f);
  set_gemm_threads(1);
  round_bf16(other.data(), other.data(), other.size());
  std::mt19937_64 g(4);
  const auto r = freivalds::draw_probes(t.n, g);
  const auto bd = freivalds::digest_b(t.b_block(), freivalds::window(r, t.n, 0));
  const auto ad = freivalds::digest_a(t.a_block());
  const freivalds f;
  EXPECT_EQ(f.first_disagreement(t.c.data(), other.data(), t.m, t.n, t.k, ad, bd, wire_precision::bf16), -1);
  auto bad = other;
  bad[7 * 48 + 3] = round_bf16(bad[7 * 48 + 3] * 1.05f);  // several ulps
  EXPECT_EQ(f.first_disagreement(t.c.data(), bad.data(), t.m, t.n, t.k, ad, bd, wire_precision::bf16), 7 * 48 + 3);
}

namespace {

// The share of liars refused among `trials`: each moves one random element
// of a random row by ±delta times that row's scale, and is checked under
// fresh probes.
double detection_rate(const wire_tile& t, double delta, int trials, std::mt19937_64& g) {
  int caught = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const auto i = static_cast<int64_t>(g() % static_cast<uint64_t>(t.m));
    const auto j = static_cast<int64_t>(g() % static_cast<uint64_t>(t.n));
    const double sign = (g() & 1) != 0 ? 1 : -1;
    caught += !t.check(t.moved(i, j, sign * delta * t.row_scale(i)), g).passed;
  }
  return static_cast<double>(caught) / trials;
}

// The smallest delta on the grid 10^(q/4) from 1e-8 up to 10 with a detection
// rate of at least 0.99 over `trials`, and the rate at 1e-2.
struct detection {
  double delta99 = INFINITY;
  double rate_at_1e2 = 0;
};

detection measure(const wire_tile& t, int trials, uint64_t seed) {
  std::mt19937_64 g(seed);
  detection d;
  d.rate_at_1e2 = detection_rate(t, 1e-2, trials, g);
  for (int q = -32; q <= 4; ++q) {
    const double delta = std::pow(10.0, q / 4.0);
    if (detection_rate(t, delta, trials, g) >= 0.99) {
      d.delta99 = delta;
      break;
    }
  }
  return d;
}

// What the derivation predicts for a bf16 result: a probe refuses the change
// once |r_j|·delta·scale_i passes row i's tolerance τ_i, nearly all of it the
// rounding term 16·sqrt(Σ_j h_ij²) (the honest difference is far below it);
// with |r_j| uniform in [1, 2] and two probes, a row is missed with
// probability clamp(τ_i/(delta·scale_i) - 1, 0, 1)². The smallest delta on
// the grid whose rate, averaged over the rows, reaches 0.99.
double predicted_bf16_delta99(const wire_tile& t) {
  std::vector<double> ratio;  // τ_i / scale_i
  for (int64_t i = 0; i < t.m; ++i) {
    double h2 = 0;
    for (int64_t j = 0; j < t.n; ++j) {
      const double h = bf16_half_ulp(t.c[static_cast<size_t>(i * t.n + j)]);
      h2 += h * h;
    }
    ratio.push_back(freivalds{}.rounding_tolerance(h2) / t.row_scale(i));
  }
  for (int q = -32; q <= 4; ++q) {
    const double delta = std::pow(10.0, q / 4.0);
    double missed = 0;
    for (double x : ratio) {
      const double p = std::clamp(x / delta - 1, 0.0, 1.0);
      missed += p * p;
    }
    if (1 - missed / static_cast<double>(ratio.size()) >= 0.99) return delta;
  }
  return INFINITY;
}

}  // namespace

TEST(freivalds_bf16, detection_of_one_moved_element) {
  // 64 x 128 x 512 and a wider 64 x 512 x 512, 400 liars per grid point.
  const int trials = 400;
  struct mode {
    const char* name;
    wire_precision operands, results;
  };
  // --wire's modes: fp32, bf16-operands and bf16.
  auto mode_of = [](const char* name, wire_precision w) {
    return mode{name, operand_precision(w), result_precision(w)};
  };
  const mode modes[] = {mode_of("fp32 operands, fp32 results", wire_precision::fp32),
                        mode_of("bf16 operands, fp32 results", wire_precision::bf16_operands),
                        mode_of("bf16 operands, bf16 results", wire_precision::bf16)};
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 128, 512}, {64, 512, 512}})
    for (const auto& md : modes) {
      const wire_tile t(m, n, k, false, false, 7, false, md.operands, md.results);
      const detection d = measure(t, trials, 99);
      // A liar moving one element by its row's scale is refused every time.
      std::mt19937_64 g(5);
      EXPECT_EQ(detection_rate(t, 1.0, trials, g), 1.0) << md.name;
      std::printf("%lldx%lldx%lld, %s: caught with p >= 0.99 from %.3g of the row's largest |c|; "
                  "at 1e-2: %.1f%%\n",
                  static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), md.name,
                  d.delta99, 100 * d.rate_at_1e2);
      if (md.results == wire_precision::fp32) {
        // The fp32 tolerance (a bound on K products' rounding, loose by
        // about sqrt(K)) lets a few thousandths of the row's scale through;
        // 1e-2 is caught every time, with bf16 operands as with fp32 ones.
        EXPECT_EQ(d.rate_at_1e2, 1.0) << md.name;
        EXPECT_LE(d.delta99, 1e-2) << md.name;
      } else {
        // bf16 results: as the derivation predicts, within one step of the
        // grid (10^0.25) for the sampling noise of 400 trials.
        const double predicted = predicted_bf16_delta99(t);
        std::printf("  predicted from the tolerance: %.3g\n", predicted);
        EXPECT_LE(d.delta99, predicted * 1.8);
        EXPECT_GE(d.delta99, predicted / 1.8);
      }
    }
}
