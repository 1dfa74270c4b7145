#pragma once
// What the PS can know each device holds this step, so a block it holds is
// named instead of sent. A device that talks to the PS itself holds what its
// own cache kept; devices behind one relay (schema/fleet_member.hpp's
// relay_seat) share the relay's operand store, so a block sent to any of
// them is named to the rest: it leaves the PS once per relay. Each mirror
// replays the holder's least-recently-used rule (block_cache) on the blocks
// sent and named, in the order the holder meets them. Pure: no actors.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "actors/device/block_cache.hpp"
#include "schema/fleet_member.hpp"

namespace cleave {

class sent_mirrors {
 public:
  // The mirror of what `member` holds: its own cache, or its relay's store.
  block_cache& of(const fleet_member& member);
  // `member` missed block `key`, which its mirror said it held. A device's
  // own mirror replays its cache exactly, so a miss means it went wrong
  // somewhere: it starts again empty. A relay may simply not have met the
  // block yet (each device's tasks reach it on a connection of their own,
  // in no common order): only that block is sent again.
  void forget(const fleet_member& member, uint64_t key);
  // Every holder starts again empty (the fleet changed under the PS).
  void forget_all() { mirrors_.clear(); }
  // A new step: weights and activations changed, so no block recurs.
  void clear();

  // Block `key` was named in a task to `member` this step. Says whether it
  // was its first naming this step at all, and the first to the member's
  // holder (the device, or its relay): the bytes a PS sends when every
  // operand leaves it once, and once per relay.
  struct first_naming {
    bool in_step = false;
    bool for_holder = false;
  };
  first_naming named(const fleet_member& member, uint64_t key);

 private:
  // A device's own id, or a relay's (negative, stable for the run).
  int64_t holder_of(const fleet_member& member);

  std::unordered_map<int64_t, block_cache> mirrors_;
  std::map<std::string, int64_t> relays_;
  std::unordered_set<uint64_t> named_;
  std::set<std::pair<int64_t, uint64_t>> named_by_holder_;
};

}  // namespace cleave
