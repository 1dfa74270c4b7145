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

uint64_t block_key(const float* data, int64_t rows, int64_t cols, int64_t ld) {
  // Four independent lanes keep the hash near memory speed.
  uint64_t lane[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL,
                      0x082efa98ec4e6c89ULL};
  lane[0] = mix(lane[0], static_cast<uint64_t>(rows));
  lane[1] = mix(lane[1], static_cast<uint64_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = data + r * ld;
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      uint64_t v[4];
      std::memcpy(v, row + c, sizeof(v));
      for (int i = 0; i < 4; ++i) lane[i] = mix(lane[i], v[i]);
    }
    for (; c < cols; ++c) {
      uint32_t v;
      std::memcpy(&v, row + c, sizeof(v));
      lane[c & 3] = mix(lane[c & 3], v);
    }
  }
  return mix(mix(lane[0], lane[1]), mix(lane[2], lane[3]));
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
