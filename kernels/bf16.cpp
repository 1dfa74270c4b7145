#include "kernels/bf16.hpp"

#include "kernels/row_parts.hpp"

namespace cleave {

void to_bf16(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = to_bf16(in[i]);
}

void from_bf16(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
}

void round_bf16(const float* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = round_bf16(in[i]);
}

void round_bf16_block(const float* in, int64_t rows, int64_t cols, int64_t ld, float* out,
                      int64_t out_ld) {
  const int parts = row_parts(rows, static_cast<double>(rows) * static_cast<double>(cols) * sizeof(float));
  for_each_part(parts, rows, 1, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) round_bf16(in + r * ld, out + r * out_ld, static_cast<size_t>(cols));
  });
}

}  // namespace cleave
