#include "schema/block_key.hpp"

#include <cstring>
#include <vector>

#include "kernels/row_parts.hpp"

namespace cleave {

namespace {

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v * 0x9e3779b97f4a7c15ULL;
  h = (h << 27) | (h >> 37);
  return h * 0xbf58476d1ce4e5b9ULL + 0x94d049bb133111ebULL;
}

using lanes = uint32_t __attribute__((vector_size(64)));
constexpr int64_t stripe = sizeof(lanes) / sizeof(float);
constexpr uint32_t salt_step = 0x9e3779b9u;
constexpr lanes initial = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
                           0x082efa98u, 0xec4e6c89u, 0x452821e6u, 0x38d01377u, 0xbe5466cfu, 0x34e90c6cu,
                           0xc0ac29b7u, 0xc97c50ddu, 0x3f84d5b5u, 0xb5470917u};

// Adds rows [r0, r1)'s part of the lanes' sum to `acc`. Sixteen 32-bit lanes take 64 bytes
// at a time, after XXH3's accumulate step: a lane adds its word and the
// product of its word and its neighbour's, each xored with a salt that
// depends on the stripe's position in the block. No lane depends on
// another's history and the parts only add, so rows can be taken in any
// split (row_parts.hpp) and the PS hashes at memory speed.
void add_rows(const float* data, int64_t r0, int64_t r1, int64_t cols, int64_t ld, float* copy_to,
              int64_t copy_ld, lanes& acc) {
  const int64_t stripes_per_row = (cols + stripe - 1) / stripe;
  lanes salt = initial + static_cast<uint32_t>(static_cast<uint64_t>(r0 * stripes_per_row)) * salt_step;
  const lanes neighbour = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};
  auto take = [&](const lanes& w) {
    salt += salt_step;
    const lanes k = w ^ salt;
    acc += w + k * __builtin_shuffle(k, neighbour);
  };
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = data + r * ld;
    float* dst = copy_to != nullptr ? copy_to + r * copy_ld : nullptr;
    int64_t c = 0;
    for (; c + stripe <= cols; c += stripe) {
      lanes w;
      std::memcpy(&w, row + c, sizeof(w));
      if (dst != nullptr) std::memcpy(dst + c, &w, sizeof(w));  // the copy costs no second read
      take(w);
    }
    if (c < cols) {  // the row's tail, zero-padded: the shape is hashed below
      lanes w = {};
      std::memcpy(&w, row + c, static_cast<size_t>(cols - c) * sizeof(float));
      if (dst != nullptr) std::memcpy(dst + c, row + c, static_cast<size_t>(cols - c) * sizeof(float));
      take(w);
    }
  }
}

}  // namespace

uint64_t block_key(const float* data, int64_t rows, int64_t cols, int64_t ld, float* copy_to,
                   int64_t copy_ld) {
  const double bytes = static_cast<double>(rows) * static_cast<double>(cols) * sizeof(float);
  const int parts = row_parts(rows, bytes);
  lanes acc = initial;
  if (parts == 1) {
    add_rows(data, 0, rows, cols, ld, copy_to, copy_ld, acc);
  } else {
    std::vector<lanes> sums(static_cast<size_t>(parts), lanes{});
    for_each_part(parts, rows, 1, [&](int part, int64_t r0, int64_t r1) {
      add_rows(data, r0, r1, cols, ld, copy_to, copy_ld, sums[static_cast<size_t>(part)]);
    });
    for (const lanes& s : sums) acc += s;
  }
  uint64_t h = mix(mix(0x94d049bb133111ebULL, static_cast<uint64_t>(rows)), static_cast<uint64_t>(cols));
  for (int i = 0; i < 16; i += 2) h = mix(h, (static_cast<uint64_t>(acc[i]) << 32) | acc[i + 1]);
  return h;
}

uint64_t wire_block_key(uint64_t key, wire_precision w) {
  return w == wire_precision::fp32 ? key : mix(key, 0xbf16bf16bf16bf16ULL);
}

}  // namespace cleave
