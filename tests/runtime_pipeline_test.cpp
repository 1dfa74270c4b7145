// The engine's send window and snapshots against real actors in one
// process: --pipelined-devices bounds what a device holds, and a step copies
// each block it sends once.

#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "actors/planner/cost_model.hpp"
#include "tests/runtime_fixture.hpp"

using namespace cleave;
using namespace cleave::runtime_testing;

// --pipelined-devices: a device is sent at most the tasks its memory holds
// (device_pipeline_depth, at most 3); the rest wait at the PS and go out as
// its results come back. The products are the local ones all the same.
TEST_F(runtime, pipelined_devices_are_sent_no_more_tasks_than_their_depth) {
  for (int i = 0; i < 2; ++i) add_device(*preset_profile("fast"));
  expect_fleet(2);
  engine_options opts = timeout(10.0);
  opts.pipelined_devices = true;
  distributed_gemm eng(sys, planner, opts);
  check_products(eng, 1e-5);
  // A product cut finer than two windows hold.
  const tensor x = random_matrix(512, 384, 5), w = random_matrix(384, 512, 6);
  tensor y(512, 512), y_ref(512, 512);
  eng.gemm({1, gemm_role::forward}, x.view(), false, w.view(), false, y.view(), 0.0f);
  gemm_local<float>(x.view(), false, w.view(), false, y_ref.view(), 0.0f);
  for (int64_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], y_ref[i], 1e-5 * (1 + std::abs(y_ref[i]))) << i;
  const auto acc = eng.accounts();
  bool waited = false;
  for (const auto& [id, a] : acc.devices) {
    if (a.tiles == 0) continue;
    EXPECT_GE(a.most_tasks_at_once, 1u) << "device " << id;
    EXPECT_LE(a.most_tasks_at_once, max_pipeline_depth) << "device " << id;
    waited |= a.tiles > a.most_tasks_at_once;
  }
  EXPECT_TRUE(waited) << "no device had more tiles than it held at once: the test proves nothing";
}

TEST_F(runtime, a_step_copies_each_operand_block_it_sends_once) {
  // dY is dX's A and dW's B; X and W were sent for the forward product. The
  // backward batch takes one snapshot, dY's, and copies each of its blocks
  // once, whichever products and devices it goes to.
  for (int i = 0; i < 4; ++i) add_device(*preset_profile("fast"));
  expect_fleet(4);
  distributed_gemm eng(sys, planner, timeout(10.0));
  const tensor x = random_matrix(96, 80, 1), w = random_matrix(80, 64, 2), dy = random_matrix(96, 64, 3);
  tensor y(96, 64), dx(96, 80), dw(80, 64);
  ASSERT_FALSE(eng.begin_step(1));
  eng.gemm({0, gemm_role::forward}, x.view(), false, w.view(), false, y.view(), 0.0f);
  const plan& forward = eng.plan_for({0, gemm_role::forward}, 96, 64, 80);
  ASSERT_FALSE(forward.local) << "nothing was distributed: the test proves nothing";
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> dy_blocks;  // as the forward cuts Y
  for (const auto& a : forward.tiles) dy_blocks.insert({a.t.m0, a.t.m1, a.t.n0, a.t.n1});
  const uint64_t taken = eng.snapshots().snapshots_taken(), copies = eng.snapshots().copies();
  eng.gemm_batch({{{0, gemm_role::grad_input}, dy.view(), false, w.view(), true, dx.view(), 0.0f},
                  {{0, gemm_role::grad_weight}, x.view(), true, dy.view(), false, dw.view(), 0.0f}});
  EXPECT_EQ(eng.snapshots().snapshots_taken() - taken, 1u);
  EXPECT_EQ(eng.snapshots().copies() - copies, dy_blocks.size());
}

