// The PS's streaming passes on several cores (kernels/row_parts.hpp): the
// ranges cover every unit once, and each pass gives the bits its one-thread
// run gives: block keys, the copies made while keying, the check's sums,
// folds and bf16 rounding.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "actors/ps/engine/fold_order.hpp"
#include "actors/ps/verify/freivalds.hpp"
#include "kernels/bf16.hpp"
#include "kernels/row_parts.hpp"
#include "schema/block_key.hpp"

namespace cleave {
namespace {

// A block over 1 MiB (row_parts_min_bytes) with a row stride wider than its rows.
constexpr int64_t rows = 611, cols = 517, ld = 530;

// One rounding-free product per value: a multiply and an add here would be
// fused on FMA builds and give other values.
std::vector<float> filled(size_t n, uint32_t seed) {
  std::vector<float> m(n);
  for (size_t i = 0; i < n; ++i)
    m[i] = static_cast<float>(static_cast<int>((i + seed) * 2654435761u % 2003u) - 1000) * 0.125f;
  return m;
}

// Runs f with pass_threads() at n, then restores it.
template <class F>
auto with_threads(int n, F&& f) {
  const int saved = pass_threads();
  set_pass_threads(n);
  auto out = f();
  set_pass_threads(saved);
  return out;
}

TEST(row_parts, ranges_cover_every_unit_once_and_start_aligned) {
  for (int64_t units : {1, 3, 4, 17, 611, 1024})
    for (int parts : {1, 2, 3, 7})
      for (int64_t align : {1, 4, 16}) {
        int64_t next = 0;
        for (int p = 0; p < parts; ++p) {
          const auto [a, b] = row_part(units, parts, p, align);
          EXPECT_EQ(a, next) << units << " " << parts << " " << align;
          EXPECT_LE(a, b);
          if (a < units) {
            EXPECT_EQ(a % align, 0);
          }
          next = b;
        }
        EXPECT_EQ(next, units);
      }
}

TEST(row_parts, a_small_pass_stays_whole_and_a_large_one_takes_the_threads) {
  with_threads(2, [] {
    EXPECT_EQ(row_parts(1000, row_parts_min_bytes - 1), 1);
    EXPECT_EQ(row_parts(1000, row_parts_min_bytes), 2);
    EXPECT_EQ(row_parts(1, 1e9), 1);      // one row: nothing to share
    EXPECT_EQ(row_parts(6, 1e9, 4), 2);   // two groups of four
    EXPECT_EQ(row_parts(4, 1e9, 4), 1);   // one group
    return 0;
  });
}

TEST(row_parts, a_block_key_is_the_one_threads_key) {
  const auto m = filled(rows * ld, 0);
  // The keys the one-pass block_key gave before it could split its rows
  // (the same on every build: integer arithmetic only).
  EXPECT_EQ(with_threads(1, [&] { return block_key(m.data(), rows, cols, ld); }), 9229145231326033020ull);
  EXPECT_EQ(with_threads(2, [&] { return block_key(m.data(), rows, cols, ld); }), 9229145231326033020ull);
  EXPECT_EQ(with_threads(3, [&] { return block_key(m.data() + 3, rows - 5, cols - 9, ld); }),
            6590477085322627551ull);
  // Keying while copying: the same key and the same copy.
  std::vector<float> one(rows * cols, 0.0f), two(rows * cols, 1.0f);
  const auto k1 = with_threads(1, [&] { return block_key(m.data(), rows, cols, ld, one.data(), cols); });
  const auto k2 = with_threads(2, [&] { return block_key(m.data(), rows, cols, ld, two.data(), cols); });
  EXPECT_EQ(k1, k2);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
  EXPECT_EQ(one[static_cast<size_t>(cols) * 7 + 5], m[static_cast<size_t>(ld) * 7 + 5]);
}

TEST(row_parts, the_checks_sums_are_the_one_threads_bits) {
  const auto c = filled(rows * ld, 11);
  std::mt19937_64 rng(5);
  const auto probes = freivalds::draw_probes(cols, rng);
  const auto window = freivalds::window(probes, cols, 0);
  const auto b = filled(static_cast<size_t>(64) * cols, 3);
  const auto bd = freivalds::digest_b({b.data(), 64, cols, cols, false}, window);
  for (auto precision : {wire_precision::fp32, wire_precision::bf16}) {
    auto sums = [&](int threads) {
      return with_threads(threads, [&] {
        row_sums s(rows, 64, precision);
        std::vector<float> copy(rows * cols);
        EXPECT_TRUE(s.add(c.data(), cols, window, bd, ld, copy.data(), cols));
        return std::make_pair(s, copy);
      });
    };
    const auto [one, copy_one] = sums(1);
    const auto [two, copy_two] = sums(2);
    for (int v = 0; v < freivalds_probes; ++v) EXPECT_EQ(one.c_r[v], two.c_r[v]);
    EXPECT_EQ(one.magnitude, two.magnitude);
    EXPECT_EQ(one.half_ulps2, two.half_ulps2);
    EXPECT_EQ(copy_one, copy_two);
  }
  // A non-finite value anywhere in the result is still seen.
  auto bad = c;
  bad[static_cast<size_t>(ld) * (rows - 1) + 3] = std::numeric_limits<float>::infinity();
  with_threads(2, [&] {
    row_sums s(rows, 64);
    EXPECT_FALSE(s.add(bad.data(), cols, window, bd, ld));
    return 0;
  });
}

TEST(row_parts, the_checks_operand_passes_are_the_one_threads_bits) {
  // op(B)·r and op(A)·y bit for bit, stored as is or transposed; op(B)'s
  // column norms (the tolerance's) to double rounding.
  const auto m = filled(rows * ld, 13);
  std::mt19937_64 rng(9);
  const auto probes = freivalds::draw_probes(rows + cols, rng);
  for (bool trans : {false, true}) {
    const stored_block block{m.data(), rows, cols, ld, trans};
    const auto r = freivalds::window(probes, block.op_cols(), 0);
    const auto one = with_threads(1, [&] { return freivalds::digest_b(block, r); });
    const auto two = with_threads(2, [&] { return freivalds::digest_b(block, r); });
    for (int v = 0; v < freivalds_probes; ++v) EXPECT_EQ(one.b_r[v], two.b_r[v]) << trans;
    ASSERT_EQ(one.col_norms.size(), two.col_norms.size());
    for (size_t j = 0; j < one.col_norms.size(); ++j)
      EXPECT_NEAR(one.col_norms[j], two.col_norms[j], 1e-13 * one.col_norms[j]) << trans << " " << j;
    for (int v = 0; v < freivalds_probes; ++v) EXPECT_NEAR(one.weighted2[v], two.weighted2[v], 1e-13 * one.weighted2[v]);
    const auto y = freivalds::window(probes, block.op_cols(), 0);
    const auto e1 = with_threads(1, [&] { return freivalds::expect(block, y); });
    const auto e3 = with_threads(3, [&] { return freivalds::expect(block, y); });
    for (int v = 0; v < freivalds_probes; ++v) EXPECT_EQ(e1.expected[v], e3.expected[v]) << trans;
    EXPECT_EQ(e1.norms, e3.norms) << trans;
  }
}

TEST(row_parts, a_fold_and_bf16_rounding_are_the_one_threads_bits) {
  const auto result = filled(rows * cols, 7);
  const auto start = filled(rows * ld, 9);
  auto fold = [&](int threads, bool copies) {
    return with_threads(threads, [&] {
      auto c = start;
      fold_tile({c.data(), rows, ld, ld}, {0, rows, 4, 4 + cols}, result.data(), copies);
      return c;
    });
  };
  EXPECT_EQ(fold(1, false), fold(2, false));
  EXPECT_EQ(fold(1, true), fold(2, true));
  auto round = [&](int threads) {
    return with_threads(threads, [&] {
      std::vector<float> out(rows * cols);
      round_bf16_block(start.data(), rows, cols, ld, out.data(), cols);
      return out;
    });
  };
  EXPECT_EQ(round(1), round(2));
}

}  // namespace
}  // namespace cleave
