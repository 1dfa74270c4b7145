// make_plan: selection (device_selection.hpp) around the grid search.

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "actors/planner/device_selection.hpp"
#include "actors/planner/grid_search.hpp"
#include "actors/planner/speed_order.hpp"

namespace cleave {

std::vector<device_view> spread_over_relays(const std::vector<device_view>& ranked) {
  std::map<int32_t, size_t> seen;  // by relay: its devices placed so far
  std::vector<std::pair<std::pair<size_t, int32_t>, size_t>> keys;  // ((place in its relay, relay), index)
  keys.reserve(ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) keys.push_back({{seen[ranked[i].relay]++, ranked[i].relay}, i});
  std::stable_sort(keys.begin(), keys.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<device_view> out;
  out.reserve(ranked.size());
  for (const auto& k : keys) out.push_back(ranked[k.second]);
  return out;
}

plan make_plan(const gemm_problem& g, const std::vector<device_view>& fleet,
               const planner_config& fleet_cfg) {
  const auto [devices, cfg] = fair_share(fleet, fleet_cfg, g.sharers);
  device_selection sel = select_devices(g, devices, cfg);
  // With nobody left, the search on the whole share says why (no usable
  // device, or none that can hold a tile).
  if (sel.ranked.empty()) return search_grids(g, devices, cfg);
  plan best = search_grids(g, sel.ranked, cfg);
  if (best.bound == plan_bound::none || best.bound == plan_bound::threshold) return best;
  // More devices can lengthen a plan: the grid search is a budgeted
  // heuristic whose grid candidates follow the fleet's size, and a slow
  // device's first tiles can cost the PS's link more than they save. So the
  // fastest u devices (u: the ones the plan used, or 3/4 of all) are planned
  // alone too, then 3/4 of those, and so on (at most max_prefixes plans),
  // and the fastest 2^j for every power of two below the fleet, so that a
  // fleet never plans worse than its fastest half would; the fastest plan
  // wins.
  constexpr int max_prefixes = 8;
  const size_t all = sel.ranked.size();
  size_t kept = all;
  std::set<size_t, std::greater<>> sizes;
  size_t size = static_cast<size_t>(best.devices_used) < all ? static_cast<size_t>(best.devices_used)
                                                             : all * 3 / 4;
  for (int tries = 0; tries < max_prefixes && size >= 1; ++tries, size = size * 3 / 4) sizes.insert(size);
  for (size_t half = 1; half < all; half *= 2) sizes.insert(half);
  // Behind relays, a prefix of the ranking takes whole runs of one relay's
  // devices (ties go to the lower id), which keeps blocks shared but puts
  // every byte on a few relays' links; the same prefixes taken evenly over
  // the relays are planned too.
  std::vector<const std::vector<device_view>*> orders{&sel.ranked};
  const std::vector<device_view> spread = cfg.relays.empty() ? std::vector<device_view>{}
                                                             : spread_over_relays(sel.ranked);
  if (!cfg.relays.empty()) orders.push_back(&spread);
  for (const auto* order : orders)
    for (size_t size : sizes) {
      const std::vector<device_view> head(order->begin(),
                                          order->begin() + static_cast<std::ptrdiff_t>(size));
      plan p = search_grids(g, head, cfg);
      if (plan_seconds(p) < plan_seconds(best)) {
        best = std::move(p);
        kept = size;
      }
    }
  give_faster_devices_more(best, sel.ranked, cfg);
  const size_t too_slow = all - kept;
  if (too_slow > 0 || sel.too_small > 0 || sel.unusable > 0) {
    best.reason += " (left out:";
    if (too_slow > 0) best.reason += " " + std::to_string(too_slow) + " slowest";
    if (sel.too_small > 0)
      best.reason += " " + std::to_string(sel.too_small) + " that cannot hold a minimal tile";
    if (sel.unusable > 0) best.reason += " " + std::to_string(sel.unusable) + " unusable";
    best.reason += ")";
  }
  return best;
}

double predict_sequence(const std::vector<gemm_problem>& gemms,
                        const std::vector<device_view>& devices, const planner_config& cfg) {
  double total = 0;
  for (const auto& g : gemms) total += plan_seconds(make_plan(g, devices, cfg));
  return total;
}

}  // namespace cleave
