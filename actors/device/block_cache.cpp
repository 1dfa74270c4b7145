#include "actors/device/block_cache.hpp"

#include <cstring>

namespace cleave {

namespace {

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v * 0x9e3779b97f4a7c15ULL;
  h = (h << 27) | (h >> 37);
  return h * 0xbf58476d1ce4e5b9ULL + 0x94d049bb133111ebULL;
}

uint64_t block_bytes(const cached_block& b) {
  return static_cast<uint64_t>(b.rows * b.cols) * sizeof(float);
}

}  // namespace

uint64_t block_key(const float* data, int64_t rows, int64_t cols, int64_t ld, float* copy_to,
                   int64_t copy_ld) {
  // Sixteen 32-bit lanes take 64 bytes at a time, after XXH3's accumulate
  // step: a lane adds its word and the product of its word and its
  // neighbour's, each xored with a salt that depends on the position. No
  // lane depends on another's history, so the PS hashes at memory speed.
  using lanes = uint32_t __attribute__((vector_size(64)));
  constexpr int64_t stripe = sizeof(lanes) / sizeof(float);
  lanes acc = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
               0x082efa98u, 0xec4e6c89u, 0x452821e6u, 0x38d01377u, 0xbe5466cfu, 0x34e90c6cu,
               0xc0ac29b7u, 0xc97c50ddu, 0x3f84d5b5u, 0xb5470917u};
  lanes salt = acc;
  const lanes neighbour = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};
  auto take = [&](const lanes& w) {
    salt += 0x9e3779b9u;
    const lanes k = w ^ salt;
    acc += w + k * __builtin_shuffle(k, neighbour);
  };
  for (int64_t r = 0; r < rows; ++r) {
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
  uint64_t h = mix(mix(0x94d049bb133111ebULL, static_cast<uint64_t>(rows)), static_cast<uint64_t>(cols));
  for (int i = 0; i < 16; i += 2) h = mix(h, (static_cast<uint64_t>(acc[i]) << 32) | acc[i + 1]);
  return h;
}

void block_cache::put(uint64_t key, cached_block block) {
  const uint64_t need = block_bytes(block);
  if (need > capacity_) return;
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  while (bytes_ + need > capacity_ && !lru_.empty()) {
    bytes_ -= block_bytes(lru_.back().second);
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(key, std::move(block));
  index_[key] = lru_.begin();
  bytes_ += need;
}

void block_cache::enter_step(uint64_t step) {
  if (step == step_ || step + 1 == step_) return;
  clear();
  step_ = step;
}

void block_cache::clear() {
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

const cached_block* block_cache::get(uint64_t key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->second;
}

}  // namespace cleave
