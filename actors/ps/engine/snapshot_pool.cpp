#include "actors/ps/engine/snapshot_pool.hpp"

#include <atomic>

namespace cleave {

std::shared_ptr<std::vector<float>> snapshot_pool::acquire(size_t n, bool for_the_step) {
  std::shared_ptr<std::vector<float>>* best = nullptr;
  size_t idle = 0;
  for (auto& b : buffers_) {
    if (b.use_count() != 1) continue;
    ++idle;
    // The smallest free buffer that fits keeps big ones for big operands.
    if (b->size() >= n && (best == nullptr || b->size() < (*best)->size())) best = &b;
  }
  // The last holder let go with a release; this orders its reads before our writes.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (best == nullptr) {
    if (idle >= max_idle_) {  // too many free buffers too small: let the smallest go
      auto smallest = buffers_.end();
      for (auto it = buffers_.begin(); it != buffers_.end(); ++it)
        if (it->use_count() == 1 && (smallest == buffers_.end() || (*it)->size() < (*smallest)->size()))
          smallest = it;
      if (smallest != buffers_.end()) buffers_.erase(smallest);
    }
    buffers_.push_back(std::make_shared<std::vector<float>>(n));
    best = &buffers_.back();
  }
  // A count of its own, which keeps the pool's buffer taken until its last
  // holder lets go (not until the last weak reference: a cache's).
  std::shared_ptr<std::vector<float>> out(
    best->get(), [taken = *best](std::vector<float>*) mutable { taken.reset(); });
  if (for_the_step) held_.push_back(out);
  return out;
}

}  // namespace cleave
