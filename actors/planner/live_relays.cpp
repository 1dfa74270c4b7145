#include "actors/planner/live_relays.hpp"

namespace cleave {

int32_t live_relay_tier::relay_of(const fleet_member& m) const {
  if (m.relay.empty()) return -1;
  auto it = index.find(m.relay.name);
  return it == index.end() ? -1 : it->second;
}

live_relay_tier live_relays(const std::map<int32_t, fleet_member>& members) {
  live_relay_tier tier;
  std::map<std::string, const relay_seat*> seats;
  for (const auto& [id, m] : members)
    if (!m.relay.empty()) seats.emplace(m.relay.name, &m.relay);
  for (const auto& [name, seat] : seats) {
    tier.index[name] = static_cast<int32_t>(tier.relays.size());
    tier.relays.push_back(relay_profile_of(*seat));
  }
  return tier;
}

}  // namespace cleave
