#pragma once
// Buffers for the PS's operand snapshots, reused once nobody refers to them.
// A snapshot lives as long as a task or a device cache holds a window of it
// (device caches keep one step's blocks), so a training step finds the
// previous step's buffers free: no allocation, no page faults and no zeroing
// on the PS's critical path. Used by one thread (its engine); the holders
// that release buffers may be any thread.

#include <cstddef>
#include <memory>
#include <vector>

namespace cleave {

class snapshot_pool {
 public:
  explicit snapshot_pool(size_t max_idle = 256) : max_idle_(max_idle) {}

  // A buffer of at least n floats (possibly more; contents unspecified) that
  // only the caller and the pool hold.
  std::shared_ptr<std::vector<float>> acquire(size_t n);

  size_t buffers() const { return buffers_.size(); }

 private:
  size_t max_idle_;  // free buffers kept beyond this are released
  std::vector<std::shared_ptr<std::vector<float>>> buffers_;
};

}  // namespace cleave
