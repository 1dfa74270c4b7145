#include "actors/ps/verify/reputation.hpp"

namespace cleave {

void reputation::passed(int32_t device) {
  auto& r = devices_[device];
  if (r.strikes == 0 || ++r.good_in_a_row < opts_.forgive_after) return;
  --r.strikes;
  r.good_in_a_row = 0;
}

bool reputation::failed(int32_t device) {
  auto& r = devices_[device];
  r.good_in_a_row = 0;
  if (r.quarantined) return false;
  if (++r.strikes < opts_.quarantine_after) return false;
  r.quarantined = true;
  return true;
}

bool reputation::quarantined(int32_t device) const {
  const auto it = devices_.find(device);
  return it != devices_.end() && it->second.quarantined;
}

int reputation::strikes(int32_t device) const {
  const auto it = devices_.find(device);
  return it == devices_.end() ? 0 : it->second.strikes;
}

}  // namespace cleave
