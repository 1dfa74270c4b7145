#include "actors/planner/dominance.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace cleave {

namespace {

// Best first by FLOP/s; equal figures compare equal.
auto key(const device_figures& d) {
  return std::make_tuple(-d.flops, d.ready, d.latency, -d.downlink, -d.uplink, d.memory);
}

bool no_worse(const device_figures& a, const device_figures& b) {
  return a.ready <= b.ready && a.latency <= b.latency && a.flops >= b.flops &&
         a.downlink >= b.downlink && a.uplink >= b.uplink && a.memory >= b.memory;
}

}  // namespace

bool dominates(const device_figures& a, const device_figures& b) {
  return no_worse(a, b) && key(a) != key(b);
}

std::vector<int64_t> dominator_counts(const std::vector<device_figures>& devices, int64_t cap) {
  const size_t nd = devices.size();
  std::vector<int64_t> out(nd, 0);
  std::vector<size_t> order(nd);  // by figures, then index: kinds are runs
  for (size_t i = 0; i < nd; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return key(devices[x]) < key(devices[y]) || (key(devices[x]) == key(devices[y]) && x < y);
  });
  std::vector<std::pair<size_t, size_t>> kinds;  // [first, last) in order, FLOP/s descending
  for (size_t i = 0; i < nd; ++i)
    if (i == 0 || key(devices[order[i]]) != key(devices[order[i - 1]]))
      kinds.push_back({i, i + 1});
    else
      kinds.back().second = i + 1;
  for (const auto& [first, last] : kinds) {
    const device_figures& a = devices[order[first]];
    int64_t better = 0;
    for (const auto& [f2, l2] : kinds) {
      if (better >= cap) break;
      const device_figures& b = devices[order[f2]];
      if (b.flops < a.flops) break;
      if (f2 != first && no_worse(b, a)) better += static_cast<int64_t>(l2 - f2);
    }
    for (size_t i = first; i < last; ++i)
      out[order[i]] = std::min<int64_t>(cap, better + static_cast<int64_t>(i - first));
  }
  return out;
}

}  // namespace cleave
