// bf16 conversion (kernels/bf16.hpp) against a reference that rounds in
// double: every bf16 value with the low halves that matter (zero, one ulp
// above zero, just below, at and just above the halfway point, all ones),
// then 2^24 random floats; ties, NaN, infinities, subnormals, the largest
// finite value and overflow by name; and the half-ulp bound Freivalds'
// bf16 tolerance rests on.

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/bf16.hpp"

using namespace cleave;

namespace {

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}
float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

// Round to nearest, ties to even, computed from the two bf16 neighbours in
// double (exact for floats): the truncation and the next bf16 away from zero.
uint16_t reference(float x) {
  const uint32_t u = bits(x);
  if (std::isnan(x)) return 0;  // not compared: NaN is checked by class
  const uint16_t lo = static_cast<uint16_t>(u >> 16);
  if ((u & 0xffffu) == 0) return lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);  // may be infinity: its distance is from 2^128
  const double xd = std::fabs(static_cast<double>(x));
  const double lod = std::fabs(static_cast<double>(from_bf16(lo)));
  const double hid = (hi & 0x7fffu) == 0x7f80u ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(from_bf16(hi)));
  const double dlo = xd - lod, dhi = hid - xd;
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1u) == 0 ? lo : hi;
}

void expect_rounds_like_reference(float x) {
  const uint16_t got = to_bf16(x);
  if (std::isnan(x)) {
    EXPECT_TRUE(std::isnan(from_bf16(got))) << std::hex << bits(x);
    EXPECT_EQ(got >> 15, bits(x) >> 31) << "NaN keeps its sign";
    return;
  }
  ASSERT_EQ(got, reference(x)) << std::hex << "x bits " << bits(x);
}

}  // namespace

TEST(bf16, every_bf16_value_with_the_low_halves_that_decide_its_rounding) {
  const uint32_t lows[] = {0x0000, 0x0001, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff};
  for (uint32_t hi = 0; hi <= 0xffff; ++hi)
    for (uint32_t lo : lows) expect_rounds_like_reference(from_bits((hi << 16) | lo));
}

TEST(bf16, every_bf16_value_widens_and_comes_back_as_itself) {
  // NaNs included, signalling ones too: a frame decoded and encoded again is
  // the same bytes (tests/fuzz/fuzz_tile checks that of every frame).
  for (uint32_t h = 0; h <= 0xffff; ++h) ASSERT_EQ(to_bf16(from_bf16(static_cast<uint16_t>(h))), h) << std::hex << h;
}

TEST(bf16, random_floats) {
  std::mt19937 g(7);
  for (int i = 0; i < (1 << 24); ++i) {
    const uint32_t u = static_cast<uint32_t>(g());
    const float x = from_bits(u);
    if (std::isnan(x)) continue;
    ASSERT_EQ(to_bf16(x), reference(x)) << std::hex << u;
  }
}

TEST(bf16, named_cases) {
  // Exact values widen back to themselves.
  for (float x : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 3.0e38f})
    if (from_bf16(to_bf16(x)) == x) {
      EXPECT_EQ(bits(round_bf16(x)), bits(x));
    }
  EXPECT_EQ(bits(round_bf16(-0.0f)), bits(-0.0f));
  // Ties: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> even (1); 1 + 3·2^-8
  // is halfway between 1 + 2^-7 and 1 + 2^-6 -> even (1 + 2^-6).
  EXPECT_EQ(round_bf16(1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(round_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(round_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // past the tie: up
  EXPECT_EQ(round_bf16(-(1.0f + 0x1p-8f)), -1.0f);
  // NaN stays NaN, whatever its payload: even one in the low half only.
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffc00000u}) {
    const float x = from_bits(nan);
    EXPECT_TRUE(std::isnan(round_bf16(x))) << std::hex << nan;
    EXPECT_EQ(to_bf16(x) >> 15, nan >> 31);
  }
  // Infinities stay; the largest finite bf16 (0x7f7f) stays; float's largest
  // finite value is past it by more than half an ulp: infinity.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(round_bf16(inf), inf);
  EXPECT_EQ(round_bf16(-inf), -inf);
  const float max_bf16 = from_bf16(0x7f7f);
  EXPECT_EQ(round_bf16(max_bf16), max_bf16);
  EXPECT_EQ(round_bf16(std::numeric_limits<float>::max()), inf);
  EXPECT_EQ(round_bf16(-std::numeric_limits<float>::max()), -inf);
  // Just below halfway to 2^128: stays the largest finite.
  EXPECT_EQ(round_bf16(from_bits(0x7f7f7fffu)), max_bf16);
  EXPECT_EQ(round_bf16(from_bits(0x7f7f8000u)), inf);  // the tie goes to even: infinity (0x7f80)
  // Subnormals: the smallest float rounds to zero, half the smallest bf16
  // subnormal (2^-134) ties to even (zero), just above it rounds up.
  EXPECT_EQ(bits(round_bf16(from_bits(1))), 0u);
  EXPECT_EQ(bits(round_bf16(0x1p-134f)), 0u);
  EXPECT_EQ(round_bf16(0x1p-134f + 0x1p-149f), 0x1p-133f);
  EXPECT_EQ(round_bf16(std::numeric_limits<float>::denorm_min() * 3), 0.0f);
  // The largest subnormal rounds up to the smallest normal.
  EXPECT_EQ(round_bf16(from_bits(0x007fffffu)), std::numeric_limits<float>::min());
}

TEST(bf16, arrays_and_blocks_round_like_the_scalar) {
  std::mt19937 g(3);
  std::normal_distribution<float> d(0, 10);
  std::vector<float> x(1000), y(1000), z(1000);
  for (auto& v : x) v = d(g);
  std::vector<uint16_t> h(x.size());
  to_bf16(x.data(), h.data(), x.size());
  from_bf16(h.data(), y.data(), h.size());
  round_bf16(x.data(), z.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], to_bf16(x[i]));
    EXPECT_EQ(bits(y[i]), bits(round_bf16(x[i])));
    EXPECT_EQ(bits(z[i]), bits(y[i]));
  }
  // A 10 x 7 block of a 10 x 100 matrix, into a 10 x 9 one: only the block is written.
  std::vector<float> out(90, 42.0f);
  round_bf16_block(x.data() + 3, 10, 7, 100, out.data(), 9);
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 9; ++c)
      EXPECT_EQ(out[r * 9 + c], c < 7 ? round_bf16(x[r * 100 + 3 + c]) : 42.0f);
}

TEST(bf16, half_ulp_bounds_the_rounding_error) {
  // Every finite float x within bf16_half_ulp(round(x)) of its rounding,
  // and the bound no more than 2^-8 of the rounded value (normal values).
  std::mt19937 g(11);
  for (int i = 0; i < (1 << 22); ++i) {
    const float x = from_bits(static_cast<uint32_t>(g()));
    const float r = round_bf16(x);
    if (!std::isfinite(x) || !std::isfinite(r)) continue;
    const double err = std::fabs(static_cast<double>(x) - r);
    const double h = bf16_half_ulp(r);
    ASSERT_LE(err, h) << std::hex << bits(x);
    if (std::fabs(r) >= std::numeric_limits<float>::min()) {
      ASSERT_LE(h, bf16_unit_roundoff * std::fabs(r));
    }
  }
  EXPECT_EQ(bf16_half_ulp(1.0f), 0x1p-8);
  EXPECT_EQ(bf16_half_ulp(-1.5f), 0x1p-8);
  EXPECT_EQ(bf16_half_ulp(0.0f), 0x1p-134);
  EXPECT_EQ(bf16_half_ulp(0x1p-133f), 0x1p-134);
  // Just below a power of two: the value rounds up to 2^e, off by at most
  // half the lower binade's ulp, within 2^e's half ulp.
  EXPECT_LE(std::fabs(static_cast<double>(from_bits(0x3f7fffffu)) - round_bf16(from_bits(0x3f7fffffu))),
            bf16_half_ulp(1.0f));
}
