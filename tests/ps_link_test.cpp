// The PS's paced link (actors/ps/engine/paced_link.hpp) and the cost model's
// time through it (ps_link_seconds), by hand.

#include <cmath>

#include <gtest/gtest.h>

#include "actors/planner/cost_model.hpp"
#include "actors/ps/engine/paced_link.hpp"

using namespace cleave;

TEST(paced_link, messages_cross_one_after_another_at_the_rate) {
  paced_link link(1e6);
  EXPECT_TRUE(link.paced());
  EXPECT_DOUBLE_EQ(link.pass(10.0, 1000000), 11.0);
  EXPECT_DOUBLE_EQ(link.pass(10.5, 500000), 11.5);  // queued behind the first
  EXPECT_DOUBLE_EQ(link.pass(20.0, 0), 20.0);        // an idle link holds nothing
  EXPECT_DOUBLE_EQ(link.pass(20.0, 2000000), 22.0);
  EXPECT_DOUBLE_EQ(link.waited_seconds(), 1.0 + 1.0 + 0.0 + 2.0);
}

TEST(paced_link, an_unpaced_link_passes_everything_at_once) {
  paced_link link;
  EXPECT_FALSE(link.paced());
  EXPECT_DOUBLE_EQ(link.pass(3.0, uint64_t{1} << 40), 3.0);
  EXPECT_DOUBLE_EQ(link.waited_seconds(), 0.0);
}

namespace {

device_view device(int32_t id) {
  device_view v;
  v.id = id;
  v.profile.name = "hand";
  v.profile.flops = 1e9;
  v.profile.memory_bytes = 1e9;
  v.profile.downlink = 1e6;
  v.profile.uplink = 1e6;
  v.profile.latency = 0;
  return v;
}

assignment on(int32_t dev, tile t) {
  assignment a;
  a.t = t;
  a.device = dev;
  return a;
}

}  // namespace

TEST(ps_link_seconds, devices_download_while_the_ps_sends_and_results_queue_at_its_ingress) {
  // Two devices, one 100x100x100 tile each: 80 kB down, 40 kB up, 2 MFLOP.
  const tile t{0, 100, 0, 100, 0, 100};
  plan p;
  p.local = false;
  p.tiles = {on(0, t), on(1, t)};
  p.bytes_down = 2 * (t.a_bytes(gemm_element_bytes) + t.b_bytes(gemm_element_bytes));
  p.bytes_up = 2 * t.c_bytes(gemm_element_bytes);
  planner_config cfg;
  cfg.ps_egress = 1e6;
  cfg.ps_ingress = 1e6;
  const std::vector<device_view> fleet{device(0), device(1)};
  // A tile alone: 0.08 down + 0.002 compute + 0.04 up = 0.122 s. Tile 0's
  // operands cross the egress over [0, 0.08] as device 0 downloads them:
  // done at 0.122, its upload over [0.082, 0.122] crossing the ingress
  // too. Tile 1's cross over [0.08, 0.16]: done at 0.202, uploaded over
  // [0.162, 0.202] behind nothing.
  EXPECT_NEAR(ps_link_seconds(p, fleet, cfg), 0.202, 1e-12);
  // Where the link is fast, the devices' own time is what remains.
  cfg.ps_egress = cfg.ps_ingress = 1e12;
  EXPECT_NEAR(ps_link_seconds(p, fleet, cfg), 0.122, 1e-6);
  // A cached operand is not sent again: tile 1's 40 kB cross over
  // [0.08, 0.12], it is done at 0.08 + 0.082 = 0.162 and its result
  // crosses the ingress over [0.122, 0.162], right behind tile 0's.
  p.tiles[1].a_cached = true;
  cfg.ps_egress = cfg.ps_ingress = 1e6;
  EXPECT_NEAR(ps_link_seconds(p, fleet, cfg), 0.162, 1e-12);
  // A slow ingress queues the results: 0.082 + 0.4, then 0.4 more.
  cfg.ps_ingress = 1e5;
  EXPECT_NEAR(ps_link_seconds(p, fleet, cfg), 0.882, 1e-12);
}

TEST(ps_link_seconds, is_never_below_the_link_bounds_nor_defined_for_a_missing_device) {
  const tile t{0, 10, 0, 10, 0, 10};
  plan p;
  p.local = false;
  p.tiles = {on(0, t)};
  p.bytes_down = 1u << 30;  // as if the plan sent far more than this tile
  p.bytes_up = 0;
  planner_config cfg;
  cfg.ps_egress = cfg.ps_ingress = 1e6;
  EXPECT_GE(ps_link_seconds(p, {device(0)}, cfg), (1u << 30) / 1e6);
  p.tiles[0].device = 7;
  EXPECT_TRUE(std::isinf(ps_link_seconds(p, {device(0)}, cfg)));
}
