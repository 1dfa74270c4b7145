// Plans on a fleet that changes or is shared: replace_plan moves a plan's
// tiles to the devices left, and shards planning at once each plan on their
// share of the fleet and of the PS's link.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "actors/planner/grid_search.hpp"
#include "actors/planner/placement.hpp"
#include "tests/planner_fixtures.hpp"

using namespace cleave;
using namespace cleave::testing;

TEST(replace_plan, keeps_the_tiles_and_moves_them_to_the_devices_left) {
  const gemm_problem g{512, 768, 256, gemm_role::forward};
  const auto cfg = compute_bound_cfg();
  const auto before = make_plan(g, fleet(8, preset_like[2]), cfg);
  ASSERT_FALSE(before.local);
  ASSERT_GT(before.devices_used, 4);
  // Devices 0..3 are gone, two new ones (ids 8, 9) joined; one of them too
  // small to hold any tile.
  auto left = fleet(4, preset_like[2], 4);
  left.push_back(device_view{8, preset_like[2], 0});
  auto tiny = preset_like[2];
  tiny.memory_bytes = 1024;
  left.push_back(device_view{9, tiny, 0});
  const auto after = replace_plan(before, left, cfg);
  ASSERT_EQ(after.tiles.size(), before.tiles.size());
  std::set<int32_t> used;
  for (size_t i = 0; i < after.tiles.size(); ++i) {
    EXPECT_TRUE(after.tiles[i].t == before.tiles[i].t) << "tile " << i << " was re-cut or moved";
    EXPECT_TRUE(after.tiles[i].device >= 4 && after.tiles[i].device <= 8) << after.tiles[i].device;
    used.insert(after.tiles[i].device);
  }
  EXPECT_EQ(after.grid_m, before.grid_m);
  EXPECT_EQ(after.grid_n, before.grid_n);
  EXPECT_EQ(after.grid_k, before.grid_k);
  EXPECT_EQ(used.count(8), 1u) << "the joined device should take work";
  EXPECT_GT(after.predicted_seconds, 0);
  // Deterministic whatever the order devices are listed in.
  auto shuffled = left;
  std::reverse(shuffled.begin(), shuffled.end());
  const auto again = replace_plan(before, shuffled, cfg);
  for (size_t i = 0; i < after.tiles.size(); ++i)
    EXPECT_EQ(again.tiles[i].device, after.tiles[i].device);
}

TEST(replace_plan, with_no_device_left_every_tile_goes_to_the_ps) {
  const gemm_problem g{512, 512, 512, gemm_role::grad_weight};
  const auto before = make_plan(g, fleet(4, preset_like[2]), compute_bound_cfg());
  ASSERT_FALSE(before.local);
  const auto after = replace_plan(before, {}, compute_bound_cfg());
  ASSERT_EQ(after.tiles.size(), before.tiles.size());
  for (const auto& a : after.tiles) EXPECT_EQ(a.device, -1);
  EXPECT_EQ(after.devices_used, 0);
  // A local plan stays local.
  auto local = before;
  local.local = true;
  local.tiles.clear();
  EXPECT_TRUE(replace_plan(local, fleet(4, preset_like[2]), compute_bound_cfg()).local);
}

TEST(fair_share, a_shard_plans_on_its_share_of_the_fleet_and_the_ps_link) {
  planner_config cfg;
  cfg.ps_flops = 1e9;
  gemm_problem g{2048, 768, 256, gemm_role::forward, 2};
  const auto devices = mixed_fleet(8);
  // Two shards planning at once see what one planner sees on a fleet of
  // half-rate devices behind a half-rate PS link.
  auto halved = devices;
  for (auto& d : halved) {
    d.profile.flops /= 2;
    d.profile.downlink /= 2;
    d.profile.uplink /= 2;
    d.profile.memory_bytes /= 2;
  }
  planner_config halved_cfg = cfg;
  halved_cfg.ps_egress /= 2;
  halved_cfg.ps_ingress /= 2;
  gemm_problem alone = g;
  alone.sharers = 1;
  const plan shared = make_plan(g, devices, cfg);
  const plan expected = make_plan(alone, halved, halved_cfg);
  ASSERT_FALSE(shared.local);
  EXPECT_EQ(shared.tiles.size(), expected.tiles.size());
  EXPECT_DOUBLE_EQ(shared.predicted_seconds, expected.predicted_seconds);
  for (size_t i = 0; i < shared.tiles.size(); ++i) {
    EXPECT_EQ(shared.tiles[i].t, expected.tiles[i].t);
    EXPECT_EQ(shared.tiles[i].device, expected.tiles[i].device);
  }
  // Sharing makes the same product slower on the same fleet, and the PS's
  // own rate (its own thread per shard) is not shared.
  EXPECT_GT(shared.predicted_seconds, make_plan(alone, devices, cfg).predicted_seconds);
  EXPECT_DOUBLE_EQ(shared.local_seconds, g.flops() / cfg.ps_flops);
  // Re-placing a shared plan keeps using the share.
  const plan moved = replace_plan(shared, devices, cfg);
  EXPECT_DOUBLE_EQ(moved.predicted_seconds, replace_plan(expected, halved, halved_cfg).predicted_seconds);
}
