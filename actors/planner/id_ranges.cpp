#include "actors/planner/id_ranges.hpp"

#include <iterator>

namespace cleave {

bool id_ranges::contains(int32_t id) const {
  auto it = ranges_.upper_bound(id);
  if (it == ranges_.begin()) return false;
  return id < std::prev(it)->second;
}

bool id_ranges::insert(int32_t id) {
  if (contains(id)) return false;
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
    return true;
  }
  if (after != ranges_.end()) {
    const int32_t end = after->second;
    ranges_.erase(after);
    ranges_.emplace(id, end);
    return true;
  }
  ranges_.emplace(id, id + 1);
  return true;
}

}  // namespace cleave
