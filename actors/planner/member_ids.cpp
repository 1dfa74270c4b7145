#include "actors/planner/member_ids.hpp"

#include <iterator>

namespace cleave {

bool member_ids::given(int32_t id) const {
  auto it = ranges_.upper_bound(id);
  if (it == ranges_.begin()) return false;
  --it;
  return id < it->second;
}

int32_t member_ids::take(int32_t preferred) {
  int32_t id = preferred;
  if (id < 0 || id > max_id || given(id)) {
    while (given(next_)) ++next_;
    id = next_++;
  }
  mark(id);
  return id;
}

void member_ids::mark(int32_t id) {
  // The range that ends at id (if any) grows by one; it then meets the one
  // starting at id + 1 (if any), and the two become one.
  auto after = ranges_.find(id + 1);
  auto it = ranges_.upper_bound(id);
  if (it != ranges_.begin() && std::prev(it)->second == id) {
    auto before = std::prev(it);
    before->second = id + 1;
    if (after != ranges_.end()) {
      before->second = after->second;
      ranges_.erase(after);
    }
    return;
  }
  if (after != ranges_.end()) {
    const int32_t end = after->second;
    ranges_.erase(after);
    ranges_.emplace(id, end);
    return;
  }
  ranges_.emplace(id, id + 1);
}

}  // namespace cleave
