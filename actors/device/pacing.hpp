#pragma once
// How long an emulated device takes for a tile, from its declared profile.
// The device really computes the tile; pacing only delays the reply so that
// heterogeneity shows on one machine.

#include <cstdint>

#include "schema/profile.hpp"

namespace cleave {

// latency + bytes_down / downlink + flops / flops_rate + bytes_up / uplink + latency
inline double paced_seconds(const device_profile& p, uint64_t bytes_down, double flops,
                            uint64_t bytes_up) {
  return 2 * p.latency + static_cast<double>(bytes_down) / p.downlink + flops / p.flops
         + static_cast<double>(bytes_up) / p.uplink;
}

}  // namespace cleave
