#include "actors/ps/engine/sent_mirrors.hpp"

namespace cleave {

int64_t sent_mirrors::holder_of(const fleet_member& member) {
  if (member.relay.empty()) return member.id;
  auto [it, fresh] = relays_.try_emplace(member.relay.name, -1 - static_cast<int64_t>(relays_.size()));
  return it->second;
}

block_cache& sent_mirrors::of(const fleet_member& member) {
  const int64_t holder = holder_of(member);
  auto it = mirrors_.find(holder);
  if (it != mirrors_.end()) return it->second;
  const uint64_t capacity =
    member.relay.empty() ? default_cache_bytes(member.profile.memory_bytes) : member.relay.store_bytes;
  return mirrors_.emplace(holder, block_cache(capacity)).first->second;
}

void sent_mirrors::forget(const fleet_member& member, uint64_t key) {
  auto it = mirrors_.find(holder_of(member));
  if (it == mirrors_.end()) return;
  if (member.relay.empty())
    mirrors_.erase(it);
  else
    it->second.erase(key);
}

void sent_mirrors::clear() {
  mirrors_.clear();
  named_.clear();
  named_by_holder_.clear();
}

sent_mirrors::first_naming sent_mirrors::named(const fleet_member& member, uint64_t key) {
  first_naming first;
  first.in_step = named_.insert(key).second;
  first.for_holder = named_by_holder_.emplace(holder_of(member), key).second;
  return first;
}

}  // namespace cleave
