#pragma once
// Device ids, never given twice in a run.

#include <cstddef>
#include <cstdint>

#include "actors/planner/id_ranges.hpp"

namespace cleave {

class member_ids {
 public:
  static constexpr int32_t max_id = 1000000;

  // `preferred` when it lies in [0, max_id] and was never given, else the
  // lowest id never given at or after the last one handed out this way.
  int32_t take(int32_t preferred);
  bool given(int32_t id) const { return given_.contains(id); }
  size_t ranges() const { return given_.ranges(); }

 private:
  id_ranges given_;
  int32_t next_ = 0;
};

}  // namespace cleave
