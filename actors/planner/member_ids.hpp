#pragma once
// Device ids, never given twice in a run. Most are handed out in order, so
// the ids given are kept as disjoint ranges: the memory follows the gaps
// between them, not the number of devices that ever joined.

#include <cstddef>
#include <cstdint>
#include <map>

namespace cleave {

class member_ids {
 public:
  static constexpr int32_t max_id = 1000000;

  // `preferred` when it lies in [0, max_id] and was never given, else the
  // lowest id never given at or after the last one handed out this way.
  int32_t take(int32_t preferred);
  bool given(int32_t id) const;
  size_t ranges() const { return ranges_.size(); }

 private:
  void mark(int32_t id);
  std::map<int32_t, int32_t> ranges_;  // first id -> one past the last, disjoint and apart
  int32_t next_ = 0;
};

}  // namespace cleave
