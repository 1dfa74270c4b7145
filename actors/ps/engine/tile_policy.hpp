#pragma once
// Which device takes a tile once the plan's placement no longer holds: a
// tile whose device failed or refused it, and the speculative copies of a
// straggling GEMM. Pure: plain data in, a choice out. The live engine calls
// it; so can a simulator that replays the runtime's decisions.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace cleave {

struct policy_device {
  int32_t id = -1;
  uint64_t memory_bytes = 0;
};

// One tile of a GEMM in flight, as the policy sees it.
struct policy_tile {
  uint64_t working_set = 0;      // bytes a device must hold to compute it
  std::vector<int32_t> holders;  // devices working on it now
  std::vector<int32_t> excluded; // devices that must not take it (refused, or already answered it)
  bool done = false;
  bool speculated = false;       // already has a speculative copy
};

class tile_policy {
 public:
  // The devices the engine may use, in any order.
  explicit tile_policy(std::vector<policy_device> devices);

  // Who takes over tiles[t]: among devices that can hold it, are not
  // already on it and are not excluded from it, the one with the fewest unfinished tiles of this GEMM,
  // ties to the lowest id. -1 when none can (the PS computes it).
  int32_t take_over(const std::vector<policy_tile>& tiles, size_t t) const;

  // Speculative copies for a GEMM running late: (tile, device) pairs. Idle
  // devices (on no unfinished tile) that can hold the first unfinished
  // tile, in id order, each take the next unfinished tile that is held
  // elsewhere, has no copy yet, fits the device and does not exclude it; a
  // tile the next idle device cannot take is passed over.
  std::vector<std::pair<size_t, int32_t>> speculate(const std::vector<policy_tile>& tiles) const;

  const std::vector<policy_device>& devices() const { return devices_; }

 private:
  std::vector<policy_device> devices_;  // by id
};

}  // namespace cleave
