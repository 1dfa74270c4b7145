#pragma once
// The assignment of one grid's tiles to devices, simulated on the cost model
// (see search_grids in grid_search.hpp for the rule): the grid search calls
// it for each grid it prices. Internal to the planner; pure.

#include <cstdint>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/grid_parts.hpp"
#include "actors/planner/plan.hpp"
#include "actors/planner/relay_ledger.hpp"

namespace cleave::grid {

// Min-heap entry (lazy deletion: valid while ver matches the device's).
struct entry {
  double key;
  uint32_t dev;
  uint32_t ver;
};
struct entry_after {
  bool operator()(const entry& x, const entry& y) const {
    return x.key > y.key || (x.key == y.key && x.dev > y.dev);
  }
};

struct dev_state {
  device_stages at;  // when its stages are next free
  uint32_t ver;
  int64_t last_a, last_b;  // block indices of the previous tile, -1 if none
};

inline tile_pass pass(const dev& d, const dev_state& s, uint64_t down, double fl, uint64_t up,
                      double sent, bool pipelined) {
  return pass_tile(d.latency, d.inv_downlink, d.inv_flops, d.inv_uplink, s.at, down, fl, up, sent,
                   pipelined);
}

// Simulates the assignment of one grid; reused across grids.
class grid_sim {
 public:
  // dominators[d]: how many devices are at least as good as d in every
  // figure (ready, latency, rates, memory) and better in one or by a lower
  // id, capped. While one of them is unused, the assignment prefers it to d
  // (rounding ties aside); before d's turn could come, all of them would have
  // taken a tile, so d cannot get a tile of a grid with T <= dominators[d]
  // tiles and is left out of that grid's simulation.
  grid_sim(const std::vector<dev>& devs, const std::vector<int64_t>& dominators,
           const planner_config& cfg, uint64_t element_bytes, uint64_t result_element_bytes)
      : devs_(devs), dominators_(dominators), cfg_(cfg), element_bytes_(element_bytes),
        result_element_bytes_(result_element_bytes) {}

  struct result {
    double predicted = inf;
    double max_finish = 0;
    double tail = inf;  // egress_tail of the tiles assigned so far
    uint64_t bytes_down = 0, bytes_up = 0;
    int32_t devices_used = 0;
  };

  // Returns the grid's predicted time, or inf when it provably cannot beat
  // `bound` (then `out` is incomplete). Fills out.tiles when it completes.
  result run(const dim_split& dm, const dim_split& dn, const dim_split& dk, double bound,
             std::vector<assignment>& out);

 private:
  const std::vector<dev>& devs_;
  const std::vector<int64_t>& dominators_;
  const planner_config& cfg_;
  uint64_t element_bytes_;         // an operand's, on the wire
  uint64_t result_element_bytes_;  // a result's
  std::vector<uint32_t> eligible_;
  std::vector<dev_state> state_;
  std::vector<entry> global_;
  relay_ledger relays_;
  std::vector<std::vector<entry>> heap_a_, heap_b_;
  std::vector<int64_t> touched_a_, touched_b_;
};

}  // namespace cleave::grid
