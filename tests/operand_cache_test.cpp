// The simulator's operand caches (actors/simulator/operand_cache.hpp): what
// the PS sends a device and what the device holds, on cases worked out by
// hand, and against the live engine and devices on the same plans.

#include <map>
#include <thread>

#include <caf/all.hpp>
#include <gtest/gtest.h>

#include "actors/detector/detector_actor.hpp"
#include "actors/device/device_actor.hpp"
#include "actors/planner/planner_actor.hpp"
#include "actors/ps/engine/distributed_gemm.hpp"
#include "actors/simulator/operand_cache.hpp"
#include "kernels/random.hpp"

using namespace cleave;

namespace {

constexpr uint64_t ample = uint64_t{1} << 30;

// A linear layer's products in one step of a model of two layers' shapes:
// forward Y = X W (rows x out = [rows x in] [in x out]) and its backward.
std::vector<step_gemm> one_layer(int64_t rows, int64_t in, int64_t out, int64_t count = 1) {
  std::vector<step_gemm> g(3);
  g[0].problem = {rows, out, in};
  g[0].problem.role = gemm_role::forward;
  g[1].problem = {rows, in, out};
  g[1].problem.role = gemm_role::grad_input;
  g[1].forward = 0;
  g[2].problem = {in, out, rows};
  g[2].problem.role = gemm_role::grad_weight;
  g[2].forward = 0;
  for (auto& e : g) e.count = count;
  return g;
}

}  // namespace

TEST(operand_cache, a_block_read_forward_and_backward_is_sent_once_a_step) {
  // Rows 0-99 of Y = X W, X 100 x 100, W 100 x 100: both blocks (40,000
  // bytes each) go down. Then dX = dY W^T reads W's same block (sent: only
  // dY's comes) and dW = X^T dY reads X's and dY's (both sent).
  const auto gemms = one_layer(100, 100, 100);
  operand_cache c;
  c.begin_step();
  const tile whole{0, 100, 0, 100, 0, 100};
  EXPECT_EQ(c.send(0, ample, ample, whole, operands_of(gemms, 0, 0, 0), false).bytes, 80000u);
  EXPECT_EQ(c.send(0, ample, ample, whole, operands_of(gemms, 1, 0, 0), false).bytes, 40000u);
  EXPECT_EQ(c.send(0, ample, ample, whole, operands_of(gemms, 2, 0, 0), false).bytes, 0u);
  EXPECT_EQ(c.hits(), 3u);
  // Another device holds none of it; the next step starts over.
  EXPECT_EQ(c.send(1, ample, ample, whole, operands_of(gemms, 2, 0, 0), false).bytes, 80000u);
  c.begin_step();
  EXPECT_EQ(c.send(0, ample, ample, whole, operands_of(gemms, 1, 0, 0), false).bytes, 80000u);
}

TEST(operand_cache, backward_runs_meet_the_forward_layers_last_first) {
  const auto gemms = one_layer(10, 10, 10, 3);
  // The first grad_weight run is the last forward run's layer.
  const auto last_forward = operands_of(gemms, 0, 2, 0);
  const auto first_backward = operands_of(gemms, 2, 0, 0);
  EXPECT_EQ(first_backward.a.id, last_forward.a.id);
  EXPECT_TRUE(first_backward.a.transposed);
  EXPECT_NE(operands_of(gemms, 0, 0, 0).a.id, last_forward.a.id);
  EXPECT_NE(operands_of(gemms, 0, 2, 1).a.id, last_forward.a.id) << "shards have slices of their own";
}

TEST(operand_cache, the_ps_mirrors_a_device_s_cache_and_resends_what_it_evicted) {
  // Blocks of 40,000 bytes; the cache holds two. Tiles read (A0, B), (A1,
  // B), then (A0, B) again: A1's arrival evicted A0 (least recent), and the
  // PS, replaying the device's rule, knows it: A0 comes again, B is named.
  operand_cache c;
  c.begin_step();
  const product_operands ops{{1, false}, {2, false}};
  const tile first{0, 100, 0, 100, 0, 100}, second{100, 200, 0, 100, 0, 100};
  EXPECT_EQ(c.send(0, 80000, 80000, first, ops, false).bytes, 80000u);
  EXPECT_EQ(c.send(0, 80000, 80000, second, ops, false).bytes, 40000u);
  const auto again = c.send(0, 80000, 80000, first, ops, false);
  EXPECT_EQ(again.bytes, 40000u);
  EXPECT_FALSE(again.missed);
  EXPECT_EQ(c.hits(), 2u);  // B in the second and third tiles
}

TEST(operand_cache, a_device_whose_cache_is_smaller_than_the_ps_assumes_misses_and_the_tile_is_resent) {
  // The PS takes the device to hold three blocks; it holds two. The third
  // tile names A0, which the device evicted: a miss, and the tile is resent
  // with both blocks.
  operand_cache c;
  c.begin_step();
  const product_operands ops{{1, false}, {2, false}};
  const tile first{0, 100, 0, 100, 0, 100}, second{100, 200, 0, 100, 0, 100};
  EXPECT_EQ(c.send(0, 80000, 120000, first, ops, false).bytes, 80000u);
  EXPECT_EQ(c.send(0, 80000, 120000, second, ops, false).bytes, 40000u);
  const auto again = c.send(0, 80000, 120000, first, ops, false);
  EXPECT_EQ(again.bytes, 0u);
  ASSERT_TRUE(again.missed);
  EXPECT_EQ(c.resend_missed(0, 80000, 120000, first, ops), 80000u);
  EXPECT_EQ(c.misses(), 1u);
  EXPECT_EQ(c.hits(), 1u);  // B in the second tile; the missed task's B is not counted
}

namespace {

struct config : caf::actor_system_config {
  config() {
    add_cleave_message_types(*this);
    add_planner_message_types(*this);
  }
};

tensor random_matrix(int64_t r, int64_t c, uint64_t seed) {
  tensor t(r, c);
  rng g(seed);
  fill_normal(t, 1.0, g);
  return t;
}

// Four devices whose caches hold `cache_bytes` (0: their default) run a
// layer's forward product, then its backward pair in one batch, live; the
// simulator's caches, told the same plans, must send each device the same
// bytes and find the same blocks.
void expect_the_simulator_caches_alike(uint64_t cache_bytes) {
  config cfg;
  caf::actor_system sys{cfg};
  auto detector = sys.spawn(detector_actor, detector_options{});
  planner_options po;
  po.cost.ps_egress = 1e12;  // split even test-sized products
  po.cost.ps_flops = 1e9;
  po.cost.min_split_flops = 1;
  po.min_devices = 0;
  auto planner = sys.spawn(planner_actor, po, detector);
  std::vector<caf::actor> devices;
  device_profile profile = *preset_profile("fast");
  profile.flops = 1e9;  // slow enough that every device gets tiles
  for (int i = 0; i < 4; ++i) {
    device_options o;
    o.profile = profile;
    o.paced = false;
    o.cache_bytes = cache_bytes;
    devices.push_back(sys.spawn(device_actor, o, planner));
  }
  {
    caf::scoped_actor self{sys};
    size_t have = 0;
    for (int i = 0; i < 200 && have < 4; ++i) {
      self->request(planner, caf::infinite, fleet_atom::value)
        .receive([&](uint64_t, std::vector<fleet_member>& m) { have = m.size(); }, [](caf::error&) {});
      if (have < 4) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(have, 4u);
  }
  {
    engine_options eo;
    eo.schedule.tile_timeout_seconds = 30;
    eo.schedule.speculate_factor = 0;
    distributed_gemm eng(sys, planner, eo);
    ASSERT_FALSE(eng.begin_step(1));
    const tensor x = random_matrix(512, 384, 1), w = random_matrix(384, 256, 2),
                 dy = random_matrix(512, 256, 3);
    tensor y(512, 256), dx(512, 384), dw(384, 256);
    eng.gemm({0, gemm_role::forward}, x.view(), false, w.view(), false, y.view(), 0.0f);
    eng.gemm_batch({{{0, gemm_role::grad_input}, dy.view(), false, w.view(), true, dx.view(), 0.0f},
                    {{0, gemm_role::grad_weight}, x.view(), true, dy.view(), false, dw.view(), 0.0f}});
    const auto live = eng.accounts();
    ASSERT_GT(live.tiles, 0u) << "nothing was distributed: the test proves nothing";

    const auto gemms = one_layer(512, 384, 256);
    const std::vector<std::pair<const plan*, size_t>> fwd{{&eng.plan_for({0, gemm_role::forward}, 512, 256, 384), 0}};
    const std::vector<std::pair<const plan*, size_t>> bwd{
      {&eng.plan_for({0, gemm_role::grad_input}, 512, 384, 256), 1},
      {&eng.plan_for({0, gemm_role::grad_weight}, 384, 256, 512), 2}};
    operand_cache sim;
    sim.begin_step();
    std::map<int32_t, uint64_t> sent;
    const uint64_t assumed = default_cache_bytes(profile.memory_bytes);  // what the engine takes it to hold
    const uint64_t capacity = cache_bytes != 0 ? cache_bytes : assumed;
    for (const auto& batch : {fwd, bwd}) {  // misses are resent once the batch is out
      std::vector<std::pair<const assignment*, product_operands>> missed;
      for (auto [p, index] : batch) {
        ASSERT_FALSE(p->local);
        const auto ops = operands_of(gemms, index, 0, 0);
        for (const auto& a : p->tiles) {
          const auto s = sim.send(a.device, capacity, assumed, a.t, ops, false);
          sent[a.device] += s.bytes;
          if (s.missed) missed.emplace_back(&a, ops);
        }
      }
      for (auto [a, ops] : missed) sent[a->device] += sim.resend_missed(a->device, capacity, assumed, a->t, ops);
    }
    uint64_t live_hits = 0, live_operands = 0;
    for (const auto& [id, acct] : live.devices) {
      EXPECT_EQ(sent[id], acct.bytes_down) << "device " << id;
      live_hits += acct.cache_hits;
      live_operands += acct.operands;
    }
    EXPECT_EQ(sim.hits(), live_hits);
    EXPECT_EQ(sim.operands(), live_operands);
    if (cache_bytes == 0) {
      // At least what the plans mark (blocks of the forward product found by
      // the backward pair come on top when the pair mirrors the forward
      // tiling), and some: else the caches were never exercised.
      uint64_t marked = 0;
      for (const auto& batch : {fwd, bwd})
        for (auto [p, index] : batch)
          for (const auto& a : p->tiles) marked += a.a_cached + a.b_cached;
      EXPECT_GE(sim.hits(), marked);
      EXPECT_GT(sim.hits(), 0u) << "no block was found in a cache: the test proves little";
    } else {
      EXPECT_GT(sim.misses(), 0u) << "no block was missed: the test proves little";
    }
  }
  for (auto& d : devices) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(planner, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(detector, caf::exit_reason::user_shutdown);
}

}  // namespace

TEST(operand_cache, sends_what_the_live_engine_sends_on_the_same_plans) {
  expect_the_simulator_caches_alike(0);
}

TEST(operand_cache, misses_as_live_devices_whose_cache_holds_nothing) {
  expect_the_simulator_caches_alike(1);
}
