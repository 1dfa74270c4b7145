#include "actors/device/block_cache.hpp"

#include <algorithm>
#include <cstring>

namespace cleave {

namespace {

uint64_t block_bytes(const cached_block& b) {
  return static_cast<uint64_t>(b.rows * b.cols) * sizeof(float);
}

// Lent, and every window let go of. The PS's own record of what it sent
// (no values, nothing lent) is not one.
bool let_go(const cached_block& b) {
  if (b.data != nullptr || b.lent.empty()) return false;
  for (const auto& w : b.lent)
    if (!w.data.expired()) return false;
  return true;
}

}  // namespace

cached_block cached_block::held() const {
  if (data != nullptr) return *this;
  cached_block out{rows, cols, nullptr, 0, 0, {}};
  for (const auto& w : lent)
    if ((out.data = w.data.lock()) != nullptr) {
      out.offset = w.offset;
      out.ld = w.ld;
      break;
    }
  return out;
}

void block_cache::lend(uint64_t key, cached_block window) {
  window.lent = {{window.data, window.offset, window.ld}};
  window.data.reset();
  window.offset = window.ld = 0;
  put(key, std::move(window));
}

void block_cache::put(uint64_t key, cached_block block) {
  const uint64_t need = block_bytes(block);
  if (need > capacity_) return;
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    // The same key names the same values: a block the PS let go of is
    // replaced, and another window of them kept beside the live ones.
    auto& had = it->second->second;
    if (let_go(had)) {
      had = std::move(block);
    } else if (had.data == nullptr && !block.lent.empty()) {
      had.lent.erase(std::remove_if(had.lent.begin(), had.lent.end(),
                                    [](const lent_window& w) { return w.data.expired(); }),
                     had.lent.end());
      had.lent.insert(had.lent.end(), block.lent.begin(), block.lent.end());
    }
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

void block_cache::erase(uint64_t key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  bytes_ -= block_bytes(it->second->second);
  lru_.erase(it->second);
  index_.erase(it);
}

void block_cache::clear() {
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

const cached_block* block_cache::get(uint64_t key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  if (let_go(it->second->second)) {
    erase(key);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->second;
}

}  // namespace cleave
