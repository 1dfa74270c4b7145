#include "actors/planner/device_selection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace cleave {

device_profile expected_profile(const device_view& d, double detection_seconds) {
  device_profile p = d.profile;
  const double fail = d.failure_probability;
  if (fail == 0) return p;
  if (!(fail > 0 && fail < 1)) {
    p.flops = 0;  // never finishes a tile
    return p;
  }
  const double keep = 1 - fail;
  p.flops *= keep;
  p.downlink *= keep;
  p.uplink *= keep;
  p.latency = (p.latency + fail * std::max(0.0, detection_seconds) / 2) / keep;
  return p;
}

uint64_t minimal_tile_bytes(const gemm_problem& g, const planner_config& cfg) {
  const int64_t align = std::max<int64_t>(1, cfg.tile_align);
  const int64_t m = std::min(g.m, align), n = std::min(g.n, align);
  const int64_t k = g.role == gemm_role::grad_weight ? std::min(g.k, align) : g.k;
  return tile_working_set(tile{0, m, 0, n, 0, k});
}

device_selection select_devices(const gemm_problem& g, const std::vector<device_view>& devices,
                                const planner_config& cfg) {
  device_selection out;
  const uint64_t smallest = minimal_tile_bytes(g, cfg);
  for (const auto& d : devices) {
    device_view v = d;
    v.profile = expected_profile(d, cfg.detection_seconds);
    v.failure_probability = 0;  // priced into the profile
    if (!usable(v.profile) || !std::isfinite(v.ready_at)) {
      ++out.unusable;
    } else if (v.profile.memory_bytes < smallest) {
      ++out.too_small;
    } else {
      v.ready_at = std::max(0.0, v.ready_at);
      out.ranked.push_back(std::move(v));
    }
  }
  const auto parts = static_cast<int64_t>(
      std::max(1.0, std::round(std::sqrt(static_cast<double>(out.ranked.size())))));
  const tile reference{0, std::max<int64_t>(1, g.m / parts), 0, std::max<int64_t>(1, g.n / parts),
                       0, std::max<int64_t>(1, g.k)};
  std::vector<std::pair<double, size_t>> keys;
  keys.reserve(out.ranked.size());
  for (size_t i = 0; i < out.ranked.size(); ++i) {
    const auto& v = out.ranked[i];
    keys.emplace_back(v.ready_at + predict_tile(reference, g.element_bytes, g.result_element_bytes, v.profile, false, false).seconds, i);
  }
  // Ties go by relay, then id: equally fast devices of one relay stand
  // together, however the fleet's ids interleave the relays (a live fleet's
  // ids follow the order its devices joined in).
  std::sort(keys.begin(), keys.end(), [&](const auto& x, const auto& y) {
    const auto& a = out.ranked[x.second];
    const auto& b = out.ranked[y.second];
    return x.first < y.first || (x.first == y.first && std::tie(a.relay, a.id) < std::tie(b.relay, b.id));
  });
  std::vector<device_view> ranked;
  ranked.reserve(keys.size());
  for (const auto& [key, i] : keys) ranked.push_back(std::move(out.ranked[i]));
  out.ranked = std::move(ranked);
  return out;
}

}  // namespace cleave
