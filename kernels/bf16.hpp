#pragma once
// bfloat16: float32's sign, its 8-bit exponent and the top 7 bits of its
// mantissa, so a float32 becomes one by dropping its low 16 bits after
// rounding, and widens back exactly. What --wire=bf16 puts on a device link
// (schema/wire_precision.hpp). Rounding is to nearest, ties to even, as
// IEEE-754's default; NaN stays NaN (its sign kept); a value past
// the largest finite bf16 by half an ulp or more becomes infinity; float32
// subnormals round like any other value (bf16 has the same exponent range,
// so its subnormals are float32's with 7 mantissa bits).

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cleave {

// Half an ulp of bf16 relative to the value: the unit roundoff, 2^-8.
inline constexpr double bf16_unit_roundoff = 0x1p-8;

inline uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: its upper half, unless that reads as infinity (a payload in the
    // low half only), which gets the quiet bit. A bf16 value widened comes
    // back as itself, NaNs too, so a frame re-encodes to its own bytes.
    const auto h = static_cast<uint16_t>(u >> 16);
    return (h & 0x7fu) != 0 ? h : static_cast<uint16_t>(h | 0x0040u);
  }
  // Adding 0x7fff rounds up past the halfway point; the kept bit's value
  // breaks the tie towards even. A carry into the exponent is the right
  // result, up to infinity.
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

// x rounded to the nearest bf16, as a float32.
inline float round_bf16(float x) { return from_bf16(to_bf16(x)); }

void to_bf16(const float* in, uint16_t* out, size_t n);
void from_bf16(const uint16_t* in, float* out, size_t n);
// In place allowed (out == in).
void round_bf16(const float* in, float* out, size_t n);
// A rows x cols block (row stride ld) rounded into out (row stride out_ld).
void round_bf16_block(const float* in, int64_t rows, int64_t cols, int64_t ld, float* out,
                      int64_t out_ld);

// The largest distance between a value that rounds to the bf16 `x` (given as
// a float32 holding a bf16 value) and x: half its ulp, 2^(e-135) for the
// exponent field e >= 1 (also the bound at the bottom of a binade, where
// the ulp below is half as large), 2^-134 among the subnormals and zero.
inline double bf16_half_ulp(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  uint32_t e = (u >> 23) & 0xffu;
  e = e == 0 ? 1 : e;
  const uint64_t bits = static_cast<uint64_t>(static_cast<int64_t>(e) - 135 + 1023) << 52;
  double h;
  std::memcpy(&h, &bits, sizeof(h));
  return h;
}

}  // namespace cleave
