#pragma once
// A set of device ids that only grows, kept as disjoint ranges: ids are
// handed out mostly in order, so the memory follows the gaps between the
// ids held, not how many there are.

#include <cstddef>
#include <cstdint>
#include <map>

namespace cleave {

class id_ranges {
 public:
  // True when `id` was not held before.
  bool insert(int32_t id);
  bool contains(int32_t id) const;
  size_t ranges() const { return ranges_.size(); }

 private:
  std::map<int32_t, int32_t> ranges_;  // first id -> one past the last, disjoint and apart
};

}  // namespace cleave
