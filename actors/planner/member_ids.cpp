#include "actors/planner/member_ids.hpp"

namespace cleave {

int32_t member_ids::take(int32_t preferred) {
  int32_t id = preferred;
  if (id < 0 || id > max_id || given(id)) {
    while (given(next_)) ++next_;
    id = next_++;
  }
  given_.insert(id);
  return id;
}

}  // namespace cleave
