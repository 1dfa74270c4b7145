#include "actors/ps/engine/paced_link.hpp"

#include <algorithm>

namespace cleave {

double paced_link::pass(double now, uint64_t bytes) {
  if (!paced()) return now;
  const double done = std::max(now, free_at_) + static_cast<double>(bytes) / rate_;
  free_at_ = done;
  waited_ += done - now;
  return done;
}

}  // namespace cleave
