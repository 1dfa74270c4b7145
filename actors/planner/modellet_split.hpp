#pragma once
// Sizing model-lets (D-SLIDE): a wide layer's neurons cut into contiguous
// ranges, one per device, in proportion to each device's speed (FLOP/s: a
// range's forward and backward cost is linear in its neurons) but never more
// than its memory holds. Pure.

#include <cstdint>
#include <vector>

#include <caf/expected.hpp>

#include "schema/profile.hpp"

namespace cleave {

struct modellet_range {
  int32_t device = 0;  // index into the profiles given
  int32_t begin = 0, end = 0;
};

// What one neuron costs a device to hold: its weights, bias, two AdamW
// moments and a gradient (5 (hidden + 1) floats) and its ids in the LSH
// tables (one 4-byte id per table).
uint64_t modellet_bytes_per_neuron(int64_t hidden, int32_t tables);

// Ranges covering [0, neurons) in device order, sizes proportional to flops
// among the devices whose memory_fraction * memory_bytes is not the limit,
// the others at their memory's limit (water filling; rounding by largest
// remainder). A device left with no neurons gets no range. An error if the
// fleet's memory cannot hold the layer, a profile has no speed, or there are
// no devices.
caf::expected<std::vector<modellet_range>> modellet_split(const std::vector<device_profile>& fleet,
                                                          int64_t neurons, uint64_t bytes_per_neuron,
                                                          double memory_fraction = 0.5);

}  // namespace cleave
