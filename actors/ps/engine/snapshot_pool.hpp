#pragma once
// Buffers for the PS's operand snapshots, reused once nobody refers to them.
// A snapshot lives as long as a task holds a window of it, or the pool holds
// it for the step (a forward product's, whose blocks the step's backward
// products name in the devices' caches). Device caches in this process only
// refer to it (block_cache::lend): each acquisition is a reference count of
// its own, so a cache's reference to a buffer the pool handed out again is
// empty, never the new contents. A training step finds the previous step's
// buffers free: no allocation, no page faults and no zeroing on the PS's
// critical path. Used by one thread (its engine); the holders that release
// buffers may be any thread.

#include <cstddef>
#include <memory>
#include <vector>

namespace cleave {

class snapshot_pool {
 public:
  explicit snapshot_pool(size_t max_idle = 256) : max_idle_(max_idle) {}

  // A buffer of at least n floats (possibly more; contents unspecified) that
  // only the caller holds, and the pool too until begin_step when
  // `for_the_step`.
  std::shared_ptr<std::vector<float>> acquire(size_t n, bool for_the_step = false);
  // Lets go of the buffers held for the step.
  void begin_step() { held_.clear(); }
  // The run is over: every buffer goes back to the heap (one a straggling
  // task still holds, when that task goes).
  void release() {
    held_.clear();
    buffers_.clear();
  }

  size_t buffers() const { return buffers_.size(); }

 private:
  size_t max_idle_;  // free buffers kept beyond this are released
  // Free when the pool's is the only reference: every acquisition's holders
  // let go of it.
  std::vector<std::shared_ptr<std::vector<float>>> buffers_;
  std::vector<std::shared_ptr<std::vector<float>>> held_;
};

}  // namespace cleave
