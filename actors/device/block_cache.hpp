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

// A window of a snapshot of the PS in this process, by reference.
struct lent_window {
  std::weak_ptr<const std::vector<float>> data;
  int64_t offset = 0;
  int64_t ld = 0;
};

// rows x cols at `offset` of `data`, row stride `ld` (0: cols): a block the
// device owns, or a window of the snapshot an in-process PS shared.
struct cached_block {
  int64_t rows = 0;
  int64_t cols = 0;
  std::shared_ptr<const std::vector<float>> data;
  int64_t offset = 0;
  int64_t ld = 0;
  // A window of the in-process PS's snapshot is cached by reference: the PS
  // owns its operands and lets go of them when they can no longer be named
  // (snapshot_pool.hpp), so 64 emulated devices' caches do not keep a step's
  // copies alive into the next. In the cache `data` is then empty, and any
  // window still alive will do: two PS shards, or two products, may send the
  // same values from snapshots that live for different times.
  std::vector<lent_window> lent;
  const float* values() const { return data->data() + offset; }
  int64_t stride() const { return ld > 0 ? ld : cols; }
  // The block with `data` held: itself, a lent window still alive, or none.
  cached_block held() const;
};

class block_cache {
 public:
  explicit block_cache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Least recently used blocks are evicted to make room; a block larger than
  // the whole capacity is not cached. A lent block (a window the PS owns) is
  // counted as if the device held a copy: its declared memory is the budget.
  void put(uint64_t key, cached_block block);
  // A window of an in-process PS's snapshot (`data` at `offset`), cached by
  // reference (`lent`).
  void lend(uint64_t key, cached_block window);
  // Marks the block as recently used. A lent block whose every window the
  // PS let go of is dropped: null, as for a block never cached.
  const cached_block* get(uint64_t key);
  // The PS forgets what it sent a device when a step begins (weights and
  // activations change, so no block recurs), and the cache follows: a task of
  // a later step, or of a step well before (a PS resumed from a checkpoint),
  // empties it. A straggler from the previous step leaves it alone.
  void enter_step(uint64_t step);
  void erase(uint64_t key);
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
