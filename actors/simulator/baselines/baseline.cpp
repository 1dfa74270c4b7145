#include "actors/simulator/baselines/baseline.hpp"

#include <algorithm>

namespace cleave {

ring_link slowest_ring_link(const std::vector<const device_profile*>& ring) {
  const size_t n = ring.size();
  double slowest_hop = 0, latency = 0;  // seconds per byte, seconds
  for (size_t i = 0; i < n; ++i) {
    const auto& from = *ring[i];
    const auto& to = *ring[(i + 1) % n];
    slowest_hop = std::max(slowest_hop, 1.0 / std::min(from.uplink, to.downlink));
    latency = std::max(latency, from.latency);
  }
  return {slowest_hop > 0 ? 1.0 / slowest_hop : 0, latency};
}

double ring_allreduce_seconds(double bytes, const std::vector<const device_profile*>& ring) {
  const size_t n = ring.size();
  if (n < 2 || bytes <= 0) return 0;
  const auto link = slowest_ring_link(ring);
  const double rounds = 2.0 * static_cast<double>(n - 1);
  return rounds * (bytes / static_cast<double>(n) / link.bytes_per_second + link.latency);
}

double ring_allreduce_bytes(double bytes, size_t members) {
  if (members < 2) return 0;
  return 2.0 * static_cast<double>(members - 1) / static_cast<double>(members) * bytes;
}

std::vector<device_view> fastest_first(std::vector<device_view> devices) {
  std::sort(devices.begin(), devices.end(), [](const device_view& a, const device_view& b) {
    return a.profile.flops > b.profile.flops || (a.profile.flops == b.profile.flops && a.id < b.id);
  });
  return devices;
}

}  // namespace cleave
