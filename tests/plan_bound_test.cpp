// What bounds a plan: the limit a plan names (plan_bound, and its reason),
// and the PS's work per tile that a finer grid must pay for.
#include <gtest/gtest.h>

#include "actors/planner/grid_search.hpp"
#include "actors/planner/placement.hpp"
#include "tests/planner_fixtures.hpp"

using namespace cleave;
using namespace cleave::testing;

// What limits a plan is an enum the plan carries (and its reason names).
TEST(plan_bound, local_plans_say_why_they_stay) {
  planner_config cfg;
  const auto devices = fleet(8, preset_like[2]);
  gemm_problem tiny{16, 16, 16};
  auto p = make_plan(tiny, devices, cfg);
  EXPECT_TRUE(p.local);
  EXPECT_EQ(p.bound, plan_bound::threshold);
  EXPECT_EQ(make_plan(gemm_problem{0, 16, 16}, devices, cfg).bound, plan_bound::none);
  gemm_problem big{2048, 2048, 2048};
  EXPECT_EQ(make_plan(big, {}, cfg).bound, plan_bound::no_device);
  // Devices too small for any tile.
  EXPECT_EQ(make_plan(big, fleet(8, prof(1e12, 1e3, 1e9, 1e9, 0)), cfg).bound, plan_bound::memory);
  // A PS faster than the whole fleet: the lower bound that lost names its
  // limit, here the devices' FLOP/s together.
  planner_config fast_ps = compute_bound_cfg();
  fast_ps.ps_flops = 5e11;
  p = make_plan(big, fleet(16, prof(1e10, 8e9, 1e12, 1e12, 0)), fast_ps);
  ASSERT_TRUE(p.local);
  EXPECT_EQ(p.bound, plan_bound::compute) << p.reason;
  EXPECT_NE(p.reason.find("compute)"), std::string::npos) << p.reason;
  // A PS far faster still: no grid's single tile can beat it.
  fast_ps.ps_flops = 1e15;
  p = make_plan(big, devices, fast_ps);
  ASSERT_TRUE(p.local);
  EXPECT_EQ(p.bound, plan_bound::one_tile) << p.reason;
}

TEST(plan_bound, split_plans_name_the_limit_of_their_predicted_time) {
  gemm_problem g{4096, 4096, 4096};
  // Fast devices behind a slow PS link: the PS's egress binds.
  planner_config slow_link;
  slow_link.ps_flops = 1e9;
  slow_link.ps_egress = 1e8;
  slow_link.ps_ingress = 1e12;
  auto p = make_plan(g, fleet(16, prof(1e13, 8e9, 1e10, 1e10, 0)), slow_link);
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.bound, plan_bound::ps_egress) << p.reason;
  EXPECT_NE(p.reason.find("bound by PS egress"), std::string::npos) << p.reason;
  // Slow devices behind a fast PS: their compute binds.
  p = make_plan(g, fleet(16, prof(1e9, 8e9, 1e10, 1e10, 0)), compute_bound_cfg());
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.bound, plan_bound::compute) << p.reason;
  // Devices with a thin downlink: their downlink binds.
  p = make_plan(g, fleet(16, prof(1e13, 8e9, 1e6, 1e10, 0)), compute_bound_cfg());
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.bound, plan_bound::device_downlink) << p.reason;
  // Re-placing keeps telling the truth about the new placement.
  auto again = replace_plan(p, fleet(4, prof(1e13, 8e9, 1e6, 1e10, 0)), compute_bound_cfg());
  EXPECT_EQ(again.bound, plan_bound::device_downlink);
}

// The PS's work per tile: the overhead fleet's proj forward (gpt small at
// batch 16 on devices at 1e11 FLOP/s, 10 GB/s links) is bound by the PS's
// egress, which the same bytes cross whether A is cut into 8 strips or 64.
// With tiles free, 64 devices got 64 strips on the 8 devices the egress
// leaves busy; counting the PS's work per tile, 64 devices plan as 8 do.
TEST(ps_tile_seconds, a_finer_grid_must_save_more_than_its_tiles_cost) {
  const gemm_problem g{2048, 256, 1024};
  const auto device = prof(1e11, 8e9, 1e10, 1e10, 0);
  planner_config free_tiles;
  free_tiles.ps_egress = free_tiles.ps_ingress = 1e10;
  free_tiles.max_tiles_per_device = 1;
  planner_config costly = free_tiles;
  costly.ps_tile_seconds = 3e-5;
  const plan fine = make_plan(g, fleet(64, device), free_tiles);
  const plan few = make_plan(g, fleet(64, device), costly);
  ASSERT_FALSE(fine.local || few.local) << fine.reason << " / " << few.reason;
  EXPECT_LT(few.tiles.size(), fine.tiles.size()) << few.reason << " / " << fine.reason;
  EXPECT_EQ(few.tiles.size(), make_plan(g, fleet(8, device), costly).tiles.size());
  // The prediction carries the tiles' cost, and beats the fine grid's under it.
  EXPECT_NEAR(few.predicted_seconds,
              split_seconds(0, few.bytes_down, few.bytes_up, 0, 0, costly) + 3e-5 * few.tiles.size(),
              1e-12 + 1e-9 * few.predicted_seconds);
  EXPECT_LT(few.predicted_seconds, fine.predicted_seconds + 3e-5 * fine.tiles.size());
}

TEST(ps_tile_seconds, a_plan_bound_by_the_ps_work_per_tile_says_so) {
  const gemm_problem g{4096, 4096, 4096};
  planner_config cfg = compute_bound_cfg();
  cfg.ps_flops = 1e9;          // local: 137 s
  cfg.ps_tile_seconds = 0.05;  // more than the whole product takes the fleet
  const auto p = make_plan(g, fleet(16, prof(1e13, 8e9, 1e10, 1e10, 0)), cfg);
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.bound, plan_bound::ps_tiles) << p.reason;
  EXPECT_NE(p.reason.find("bound by PS per tile"), std::string::npos) << p.reason;
  EXPECT_GE(p.predicted_seconds, 0.05 * static_cast<double>(p.tiles.size()));
  // The fleet alone would take 2 x 4096^3 / 1.6e14 = 0.86 ms: one more tile
  // costs more than any split saves, so the grid is as coarse as memory allows.
  const auto fewer_devices = make_plan(g, fleet(2, prof(1e13, 8e9, 1e10, 1e10, 0)), cfg);
  EXPECT_EQ(p.tiles.size(), fewer_devices.tiles.size()) << p.reason << " / " << fewer_devices.reason;
}
