#pragma once
// The relay tier of a live fleet, as the cost model sees it: the relays its
// members joined through (fleet_member::relay), in name order, each with
// the store and links it declared. Pure.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schema/fleet_member.hpp"
#include "schema/fleet_relays.hpp"

namespace cleave {

struct live_relay_tier {
  std::vector<relay_profile> relays;
  std::map<std::string, int32_t> index;  // a relay's name: its place in `relays`
  // A member's relay's index, -1 for a device that talks to the PS itself.
  int32_t relay_of(const fleet_member& m) const;
};

live_relay_tier live_relays(const std::map<int32_t, fleet_member>& members);

}  // namespace cleave
