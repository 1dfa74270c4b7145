#pragma once
// Seeded fleets for the simulator: N devices drawn around a preset
// (schema/profile.hpp's phone, edge, laptop, vm; "mix" draws the preset
// first, uniformly). Each device's FLOP/s, downlink, uplink and latency are
// the preset's times an independent log-normal factor (median 1, sigma
// 0.5: about two thirds of devices within 0.6x-1.65x of the preset), and
// its memory is the preset's times 0.5, 1 or 2 with equal odds. The medians
// are the shipped presets; the spreads are assumptions (docs/SIMULATOR.md,
// "Seeded fleets"), not measurements.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "schema/profile.hpp"

namespace cleave {

std::vector<std::string> fleet_preset_names();  // phone, edge, laptop, vm, mix

caf::expected<std::vector<device_profile>> draw_fleet(const std::string& preset, int devices,
                                                      uint64_t seed);

}  // namespace cleave
