#include "actors/device/block_cache.hpp"

#include <cstring>

namespace cleave {

namespace {

uint64_t block_bytes(const cached_block& b) {
  return static_cast<uint64_t>(b.rows * b.cols) * sizeof(float);
}

}  // namespace

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
