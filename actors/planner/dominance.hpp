#pragma once
// When one device is better than another for every tile: at least as good
// in every figure and better in one. The grid search leaves a dominated
// device out of grids too small to reach it, and speed_order gives a
// dominating device at least the FLOPs of the devices it dominates. Pure.

#include <cstdint>
#include <vector>

namespace cleave {

struct device_figures {
  double ready = 0, latency = 0, flops = 0, downlink = 0, uplink = 0;
  uint64_t memory = 0;
};

// a is at least as good as b in every figure (sooner ready, lower latency,
// higher rates, more memory) and better in one.
bool dominates(const device_figures& a, const device_figures& b);

// For each device, how many devices dominate it or have the same figures and
// a lower index, capped at `cap`. Devices with the same figures (a fleet of
// a few kinds) are compared once per kind.
std::vector<int64_t> dominator_counts(const std::vector<device_figures>& devices, int64_t cap);

}  // namespace cleave
