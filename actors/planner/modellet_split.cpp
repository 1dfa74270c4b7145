#include "actors/planner/modellet_split.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "schema/errors.hpp"

namespace cleave {

uint64_t modellet_bytes_per_neuron(int64_t hidden, int32_t tables) {
  return static_cast<uint64_t>(5 * (hidden + 1)) * sizeof(float)
         + static_cast<uint64_t>(std::max(tables, 0)) * sizeof(int32_t);
}

caf::expected<std::vector<modellet_range>> modellet_split(const std::vector<device_profile>& fleet,
                                                          int64_t neurons, uint64_t bytes_per_neuron,
                                                          double memory_fraction) {
  if (fleet.empty()) return fail("model-lets need at least one device");
  if (neurons <= 0 || bytes_per_neuron == 0) return fail("model-lets: nothing to split");
  const size_t n = fleet.size();
  std::vector<double> cap(n), share(n, 0);
  double room = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(fleet[i].flops > 0)) return fail("device " + std::to_string(i) + " declares no speed");
    cap[i] = std::floor(memory_fraction * static_cast<double>(fleet[i].memory_bytes)
                        / static_cast<double>(bytes_per_neuron));
    room += cap[i];
  }
  if (room < static_cast<double>(neurons))
    return fail("the fleet's memory holds " + std::to_string(static_cast<int64_t>(room)) + " of the layer's "
                + std::to_string(neurons) + " neurons (" + std::to_string(bytes_per_neuron)
                + " bytes each, " + std::to_string(memory_fraction) + " of each device's memory)");
  // Water filling: share in proportion to speed among the devices not yet
  // at their memory's limit; one that would pass it is pinned there.
  std::vector<bool> pinned(n, false);
  double left = static_cast<double>(neurons);
  for (bool changed = true; changed;) {
    changed = false;
    double speed = 0;
    for (size_t i = 0; i < n; ++i)
      if (!pinned[i]) speed += fleet[i].flops;
    for (size_t i = 0; i < n; ++i)
      if (!pinned[i]) share[i] = left * fleet[i].flops / speed;
    for (size_t i = 0; i < n; ++i)
      if (!pinned[i] && share[i] > cap[i]) {
        pinned[i] = true;
        share[i] = cap[i];
        left -= cap[i];
        changed = true;
      }
  }
  // Whole neurons, by largest remainder, never over a cap.
  std::vector<int64_t> count(n);
  int64_t given = 0;
  for (size_t i = 0; i < n; ++i) given += count[i] = static_cast<int64_t>(std::floor(share[i]));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return share[a] - std::floor(share[a]) > share[b] - std::floor(share[b]);
  });
  for (size_t k = 0; given < neurons; k = (k + 1) % n) {
    const size_t i = order[k];
    if (static_cast<double>(count[i]) + 1 > cap[i]) continue;
    ++count[i];
    ++given;
  }
  std::vector<modellet_range> out;
  int64_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    if (count[i] == 0) continue;
    out.push_back({static_cast<int32_t>(i), static_cast<int32_t>(at), static_cast<int32_t>(at + count[i])});
    at += count[i];
  }
  return out;
}

}  // namespace cleave
