#pragma once
// Which devices of a fleet may take part in a product's plan, and what the
// planner counts on from each: a device must be usable, hold a minimal tile
// of the product, and is priced by its expected time once its observed
// failures are redone. make_plan (grid_search.hpp) then leaves out the
// slowest devices whenever that shortens the predicted time. Pure.

#include <cstdint>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/plan.hpp"

namespace cleave {

// The profile that predicts a device's expected time per tile when a tile
// sent to it is lost with probability p = d.failure_probability and then
// redone: p / (1 - p) failures are expected, each costing the attempt and
// the detection delay, so a tile of time t costs (t + p * detection_seconds)
// / (1 - p). Every rate is scaled by (1 - p) and the one-way latency raised
// to (latency + p * detection_seconds / 2) / (1 - p). p = 0 returns the
// profile unchanged; p >= 1 or not finite gives a profile `usable` refuses.
device_profile expected_profile(const device_view& d, double detection_seconds);

// Bytes (A + B + C blocks) of the smallest tile a plan of g may cut: edges
// of cfg.tile_align along M and N, and along K only for a weight gradient
// (the other products keep K whole). A device with less memory can never
// take a tile of g.
uint64_t minimal_tile_bytes(const gemm_problem& g, const planner_config& cfg);

struct device_selection {
  // The devices that may take part, with expected profiles, fastest first:
  // by ready_at plus the time of a reference tile (M and N cut into about
  // sqrt(devices) parts each), ties to the lower id.
  std::vector<device_view> ranked;
  int32_t unusable = 0;   // a non-positive or non-finite figure, or never ready
  int32_t too_small = 0;  // memory below minimal_tile_bytes
};

// The devices of `devices` (one planner's view: after fair_share) that may
// take part in a plan of g.
device_selection select_devices(const gemm_problem& g, const std::vector<device_view>& devices,
                                const planner_config& cfg);

}  // namespace cleave
