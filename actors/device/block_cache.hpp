#pragma once
// The device's bounded operand cache. Blocks are keyed by content, so a key
// names exactly one value: a block sent for the forward pass (an activation
// or weight block) is found again by the backward pass without either side
// tracking tensor identities, and a stale hit is impossible by construction.

#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "schema/profile.hpp"

namespace cleave {

// rows x cols at `offset` of `data`, row stride `ld` (0: cols): a block the
// device owns, or a window of the snapshot an in-process PS shared.
struct cached_block {
  int64_t rows = 0;
  int64_t cols = 0;
  std::shared_ptr<const std::vector<float>> data;
  int64_t offset = 0;
  int64_t ld = 0;
  const float* values() const { return data->data() + offset; }
  int64_t stride() const { return ld > 0 ? ld : cols; }
};


class block_cache {
 public:
  explicit block_cache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Least recently used blocks are evicted to make room; a block larger than
  // the whole capacity is not cached.
  void put(uint64_t key, cached_block block);
  // Marks the block as recently used.
  const cached_block* get(uint64_t key);
  // The PS forgets what it sent a device when a step begins (weights and
  // activations change, so no block recurs), and the cache follows: a task of
  // a later step, or of a step well before (a PS resumed from a checkpoint),
  // empties it. A straggler from the previous step leaves it alone.
  void enter_step(uint64_t step);
  void clear();

  uint64_t bytes() const { return bytes_; }
  uint64_t capacity() const { return capacity_; }
  size_t size() const { return index_.size(); }

 private:
  using entry = std::pair<uint64_t, cached_block>;
  uint64_t capacity_;
  uint64_t bytes_ = 0;
  uint64_t step_ = 0;
  std::list<entry> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<entry>::iterator> index_;
};

}  // namespace cleave
