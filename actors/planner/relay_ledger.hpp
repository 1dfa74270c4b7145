#pragma once
// What a grid's assignment sends through each relay (planner_config::relays):
// a block reaches a relay from the PS once, and every device behind it
// that reads the block downloads it from the relay. The assignment asks it
// what a tile would cost the PS's link (ps_bytes) and records each tile
// placed (send); the relays' own links then bound the plan (link_seconds).
// Pure.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schema/fleet_relays.hpp"

namespace cleave {

class relay_ledger {
 public:
  // A fresh assignment over `relays` relays of a grid with a_blocks A
  // blocks and b_blocks B blocks: nothing sent yet.
  void begin(size_t relays, size_t a_blocks, size_t b_blocks);

  // Bytes the PS would send for a tile whose device (behind `relay`, -1:
  // none) needs its A block (index a, ab bytes) and/or its B block.
  uint64_t ps_bytes(int32_t relay, bool need_a, bool need_b, size_t a, size_t b, uint64_t ab,
                    uint64_t bb) const {
    if (relay < 0) return (need_a ? ab : 0) + (need_b ? bb : 0);
    const auto r = static_cast<size_t>(relay);
    const bool send_a = need_a && has_a_[r * a_blocks_ + a] != stamp_;
    const bool send_b = need_b && has_b_[r * b_blocks_ + b] != stamp_;
    return (send_a ? ab : 0) + (send_b ? bb : 0);
  }
  // The tile is placed: returns ps_bytes, and records what the relay now
  // holds, fetched, served and forwards (cb bytes of result).
  uint64_t send(int32_t relay, bool need_a, bool need_b, size_t a, size_t b, uint64_t ab,
                uint64_t bb, uint64_t cb);

  // The longest any relay's links are busy with what was sent: its fetches
  // over its downlink, its devices' operands over its fan-out, their results
  // over its fan-out and then its uplink (each direction a link of its own).
  double link_seconds(const std::vector<relay_profile>& relays) const;

 private:
  struct traffic {
    uint64_t in = 0, up = 0, out = 0;
  };
  size_t a_blocks_ = 0, b_blocks_ = 0;
  uint32_t stamp_ = 0;  // marks what this assignment sent: no clearing between grids
  std::vector<uint32_t> has_a_, has_b_;  // relay * blocks + block: stamp when sent
  std::vector<traffic> traffic_;
};

}  // namespace cleave
