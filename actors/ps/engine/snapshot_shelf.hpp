#pragma once
// The step's snapshots by live operand: where the operand is in memory and
// its shape. A product that reads an operand another product of the step
// sent blocks of (dY: dX's A and dW's B; X: the forward's A and, when a tile
// moves, dW's) finds those blocks in the snapshot already, when their
// content keys say the values are the same: one copy of a block a step,
// however many products send it. Blocks are copied into one snapshot until
// one would overlap a block copied with other values (the memory was written
// since, or another product cuts it otherwise): then a new snapshot takes
// over the place. Nothing copied is ever written again, so windows handed
// out stay valid while devices read them. Used by one thread (its engine).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "actors/ps/engine/snapshot_pool.hpp"

namespace cleave {

class snapshot_shelf {
 public:
  using place = std::tuple<const float*, int64_t, int64_t, int64_t>;  // data, rows, cols, ld
  using rect = std::tuple<int64_t, int64_t, int64_t, int64_t>;        // rows [r0, r1), cols [c0, c1)
  // Writes the block's values (as they are to be sent) to `into`, at the
  // snapshot's row stride (the operand's cols), and returns their key; with
  // null, only the key.
  using copier = std::function<uint64_t(float* into)>;
  struct spot {
    std::shared_ptr<std::vector<float>> snapshot;  // the operand packed, rows x cols
    uint64_t key;
  };

  // Where block r of the operand at p is, with its key (given when known:
  // the batch hashed the same block). `for_the_step`: a snapshot taken from
  // the pool for it is held until the step ends (snapshot_pool::acquire).
  spot put(const place& p, const rect& r, std::optional<uint64_t> key, const copier& copy,
           bool for_the_step);

  // A step begins: the previous one's snapshots can no longer be named.
  void begin_step();
  // The run is over (snapshot_pool::release).
  void release();

  // Copies made (blocks written into snapshots), and snapshots taken.
  uint64_t copies() const { return copies_; }
  uint64_t snapshots_taken() const { return taken_; }

 private:
  struct shelved {
    // The shelf does not keep it alive: its tasks, the engine's calls, and
    // the pool when held for the step do.
    std::weak_ptr<std::vector<float>> snapshot;
    std::map<rect, uint64_t> blocks;  // copied, with their keys
  };
  snapshot_pool pool_;
  std::map<place, shelved> shelves_;
  uint64_t copies_ = 0, taken_ = 0;
};

}  // namespace cleave
