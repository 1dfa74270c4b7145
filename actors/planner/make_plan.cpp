// make_plan: selection (device_selection.hpp) around the grid search.

#include <string>

#include "actors/planner/device_selection.hpp"
#include "actors/planner/grid_search.hpp"

namespace cleave {

plan make_plan(const gemm_problem& g, const std::vector<device_view>& fleet,
               const planner_config& fleet_cfg) {
  const auto [devices, cfg] = fair_share(fleet, fleet_cfg, g.sharers);
  device_selection sel = select_devices(g, devices, cfg);
  // With nobody left, the search on the whole share says why (no usable
  // device, or none that can hold a tile).
  if (sel.ranked.empty()) return search_grids(g, devices, cfg);
  plan best = search_grids(g, sel.ranked, cfg);
  if (best.bound == plan_bound::none || best.bound == plan_bound::threshold) return best;
  // The slowest devices lengthen a plan when their first tiles cost the PS's
  // link more than they save, or finish last: try the fastest half, quarter,
  // ... while each beats the plan before.
  size_t kept = sel.ranked.size();
  for (size_t fewer = kept / 2; fewer >= 1; fewer /= 2) {
    const std::vector<device_view> head(sel.ranked.begin(),
                                        sel.ranked.begin() + static_cast<std::ptrdiff_t>(fewer));
    plan p = search_grids(g, head, cfg);
    if (!(plan_seconds(p) < plan_seconds(best))) break;
    best = std::move(p);
    kept = fewer;
  }
  const size_t too_slow = sel.ranked.size() - kept;
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
