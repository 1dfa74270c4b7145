#pragma once
// What the grid search's parts share (grid_search.cpp, grid_assignment.cpp):
// a usable device's figures and one dimension's split into parts. Internal
// to the planner.

#include <cstdint>
#include <limits>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/grid_search.hpp"

namespace cleave::grid {

inline constexpr double inf = std::numeric_limits<double>::infinity();

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A usable device, with its figures copied out of the profile.
struct dev {
  int32_t id;
  int32_t relay;  // planner_config::relays index, -1: the PS itself
  double latency, downlink, flops, uplink, ready;
  uint64_t memory;
  uint64_t cache;  // its operand cache: a larger block is sent again for every tile
  double inv_downlink, inv_flops, inv_uplink;
  dev(int32_t id_, const device_profile& p, double ready_, int32_t relay_)
      : id(id_),
        relay(relay_),
        latency(p.latency),
        downlink(p.downlink),
        flops(p.flops),
        uplink(p.uplink),
        ready(ready_),
        memory(p.memory_bytes),
        cache(default_cache_bytes(p.memory_bytes)),
        inv_downlink(1.0 / p.downlink),
        inv_flops(1.0 / p.flops),
        inv_uplink(1.0 / p.uplink) {}
  double cost(uint64_t down, double fl, uint64_t up) const {
    return tile_seconds(latency, inv_downlink, inv_flops, inv_uplink, down, fl, up);
  }
};

// One dimension's split into g parts: its edges and its size classes.
struct dim_split {
  int64_t g = 1;
  std::vector<int64_t> edges;
  int64_t smax = 0, smin = 0;
};

inline dim_split make_dim_split(int64_t size, int64_t g, int64_t align) {
  dim_split d;
  d.g = g;
  d.edges = split_edges(size, g, align);
  d.smax = 0;
  d.smin = std::numeric_limits<int64_t>::max();
  for (int64_t p = 0; p < g; ++p) {
    int64_t s = d.edges[p + 1] - d.edges[p];
    d.smax = std::max(d.smax, s);
    d.smin = std::min(d.smin, s);
  }
  return d;
}

}  // namespace cleave::grid
