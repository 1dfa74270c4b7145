#include "actors/planner/live_relays.hpp"

namespace cleave {

int32_t live_relay_tier::relay_of(const fleet_member& m) const {
  if (m.relay.empty()) return -1;
  auto it = index.find(m.relay.name);
  return it == index.end() ? -1 : it->second;
}

live_relay_tier live_relays(const std::map<int32_t, fleet_member>& members) {
  live_relay_tier tier;
  std::map<std::string, uint64_t> stores;
  for (const auto& [id, m] : members)
    if (!m.relay.empty()) stores.emplace(m.relay.name, m.relay.store_bytes);
  for (const auto& [name, store] : stores) {
    tier.index[name] = static_cast<int32_t>(tier.relays.size());
    relay_profile r;
    r.name = name;
    r.memory_bytes = store;
    tier.relays.push_back(r);
  }
  return tier;
}

}  // namespace cleave
