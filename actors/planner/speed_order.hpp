#pragma once
// A split plan's assignment, corrected so that a device never carries fewer
// FLOPs than a device it dominates. The greedy assignment (grid_search.hpp)
// takes tiles largest first, one at a time, so a device can end up with
// one large tile while a slower device gets a large and a small one. Pure.

#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/plan.hpp"

namespace cleave {

// Where a device dominating another (dominance.hpp) has fewer FLOPs, the two swap their
// tile lists (same tiles, same order, so the same operands cached and the
// same bytes) unless one of them would then finish after the plan's
// predicted time; repeated until no such swap is left. So the plan's
// predicted time never grows, and a faster device carries fewer FLOPs only
// where giving it the other's tiles would lengthen the plan. `devices` are the ones the plan was made on (one planner's view);
// predicted_finish, predicted_seconds, devices_used, bound and reason follow.
void give_faster_devices_more(plan& p, const std::vector<device_view>& devices,
                              const planner_config& cfg);

}  // namespace cleave
