// The PS's own work on a plan's tiles, op by op (actors/planner/ps_tile_work.hpp),
// and the simulator charging it on the PS's thread (batch_sim).

#include <limits>

#include <gtest/gtest.h>

#include "actors/planner/ps_tile_work.hpp"
#include "kernels/row_parts.hpp"
#include "actors/simulator/batch_sim.hpp"
#include "tests/plan_fixtures.hpp"

using namespace cleave;

namespace {

// Round figures, so that each op's part can be worked out by hand.
ps_op_rates round_rates() {
  ps_op_rates r;
  r.op_seconds = 1e-6;
  r.hash_rate = 1e10;
  r.copy_rate = 5e9;
  r.prepare_rate = 4e9;
  r.check_rate = 2e9;
  r.fold_rate = 1e9;
  return r;
}

using cleave::testing::grid_plan;

device_profile fast_device() {
  device_profile p;
  p.name = "test";
  p.flops = 1e12;
  p.memory_bytes = 1'000'000'000;
  p.downlink = p.uplink = 1e10;
  p.latency = 0;
  return p;
}

}  // namespace

TEST(ps_tile_work, each_op_costs_its_fixed_part_and_its_bytes_at_its_rate) {
  // Two tiles side by side in n: they share A (100 x 100, 40 kB), each has a
  // B (100 x 50, 20 kB) and a C block of its own (100 x 50, 20 kB).
  const auto r = round_rates();
  const auto w = ps_plan_work(grid_plan(100, 100, 100, 1, 2, 1), r, false);
  ASSERT_EQ(w.issue.size(), 2u);
  // Tile 0: its task, A copied, B copied. Tile 1: its task, its B copied (A already is).
  EXPECT_DOUBLE_EQ(w.issue[0], 3e-6 + 40e3 / 5e9 + 20e3 / 5e9);
  EXPECT_DOUBLE_EQ(w.issue[1], 2e-6 + 20e3 / 5e9);
  // Each result: the check's pass, copied into C by it (first on its block).
  EXPECT_DOUBLE_EQ(w.result[0], 1e-6 + 20e3 / 2e9);
  EXPECT_DOUBLE_EQ(w.result[1], w.result[0]);
  // One group (one A block): op(A)·y once, op(B)·r for each B.
  EXPECT_DOUBLE_EQ(w.prepare, 3e-6 + (40e3 + 2 * 20e3) / 4e9);
  EXPECT_DOUBLE_EQ(w.total(), w.issue[0] + w.issue[1] + w.result[0] + w.result[1] + w.prepare);
}

TEST(ps_tile_work, a_block_the_device_holds_is_keyed_not_copied_and_a_later_partial_is_folded) {
  const auto r = round_rates();
  plan p = grid_plan(100, 100, 100, 1, 1, 2);  // K cut in two: two partials on one block of C
  p.tiles[0].b_cached = p.tiles[1].b_cached = true;
  const auto w = ps_plan_work(p, r, false);
  // A blocks 100 x 50 (20 kB) copied, B blocks 50 x 100 (20 kB) keyed only.
  EXPECT_DOUBLE_EQ(w.issue[0], 3e-6 + 20e3 / 5e9 + 20e3 / 1e10);
  EXPECT_DOUBLE_EQ(w.result[0], 1e-6 + 40e3 / 2e9);
  EXPECT_DOUBLE_EQ(w.result[1], w.result[0] + 1e-6 + 40e3 / 1e9);
  // bf16 rounds every block into a snapshot: copied, held or not.
  const auto rounded = ps_plan_work(p, r, true);
  EXPECT_DOUBLE_EQ(rounded.issue[0], 3e-6 + 2 * 20e3 / 5e9);
}

TEST(ps_tile_work, a_faster_rate_never_costs_more) {
  // The devices hold B (keyed, not copied) and K is cut (later partials
  // folded): every rate has a part.
  plan p = grid_plan(256, 512, 384, 2, 3, 2);
  for (auto& a : p.tiles) a.b_cached = true;
  const auto base = ps_plan_work(p, round_rates(), false).total();
  for (double ps_op_rates::*rate : {&ps_op_rates::hash_rate, &ps_op_rates::copy_rate,
                                    &ps_op_rates::prepare_rate, &ps_op_rates::check_rate,
                                    &ps_op_rates::fold_rate}) {
    auto faster = round_rates();
    faster.*rate *= 2;
    EXPECT_LT(ps_plan_work(p, faster, false).total(), base);
  }
  EXPECT_DOUBLE_EQ(ps_plan_work(p, ps_op_rates::none(), false).total(), 0.0);
  EXPECT_DOUBLE_EQ(ps_plan_work(plan{}, round_rates(), false).total(), 0.0) << "a local plan";
}

TEST(ps_tile_work, a_bad_rate_is_refused_in_one_line_naming_its_flag) {
  EXPECT_EQ(refusal(ps_op_rates{}), "") << "the measured defaults";
  auto r = ps_op_rates{};
  r.check_rate = 0;
  EXPECT_EQ(refusal(r), "--ps-check-rate must be a positive, finite number of bytes per second");
  r = ps_op_rates{};
  r.fold_rate = std::numeric_limits<double>::infinity();
  EXPECT_NE(refusal(r).find("--ps-fold-rate"), std::string::npos);
  r = ps_op_rates{};
  r.op_seconds = -1;
  EXPECT_NE(refusal(r).find("--ps-op-seconds"), std::string::npos);
  EXPECT_NE(refusal(ps_op_rates::none()), "") << "none() is for the library, not a flag value";
}

TEST(ps_tile_work, a_large_pass_is_shared_among_the_threads_up_to_the_memory_bandwidth) {
  auto r = round_rates();
  const double big = row_parts_min_bytes, small = row_parts_min_bytes - 1;
  EXPECT_DOUBLE_EQ(op_seconds(r, big, r.copy_rate), 1e-6 + big / 5e9) << "one thread";
  r.threads = 4;
  EXPECT_DOUBLE_EQ(op_seconds(r, big, r.copy_rate), 1e-6 + big / 2e10);
  EXPECT_DOUBLE_EQ(op_seconds(r, small, r.copy_rate), 1e-6 + small / 5e9) << "stays on one thread";
  r.memory_bandwidth = 1.2e10;
  EXPECT_DOUBLE_EQ(op_seconds(r, big, r.copy_rate), 1e-6 + big / 1.2e10) << "the memory binds";
  r.memory_bandwidth = 1e9;
  EXPECT_DOUBLE_EQ(op_seconds(r, big, r.copy_rate), 1e-6 + big / 5e9) << "never below one thread";
  // A plan of large tiles costs less on more threads, op by op.
  const plan p = grid_plan(2048, 2048, 2048, 2, 2, 1);
  auto one = round_rates(), many = round_rates();
  many.threads = 8;
  const auto w1 = ps_plan_work(p, one, false), w8 = ps_plan_work(p, many, false);
  EXPECT_LT(w8.total(), 0.2 * w1.total());
  EXPECT_LT(w8.prepare, 0.2 * w1.prepare);
  r = ps_op_rates{};
  r.threads = 0;
  EXPECT_EQ(refusal(r), "--ps-op-threads must be 1 to 4096");
}

// The simulator charges the work on the PS's thread: the GEMM ends later by
// at least the issue of the last tile and the result's check, and a faster
// rate never ends it later.
TEST(ps_tile_work, the_simulated_gemm_pays_the_ps_work_where_the_engine_does_it) {
  const plan p = grid_plan(512, 512, 512, 2, 2, 1);
  auto run = [&](ps_op_rates r) {
    sim_fleet fleet(std::vector<device_profile>(4, fast_device()));
    churn_feed none;
    batch_totals totals;
    schedule_options o;
    o.speculate_factor = 0;
    o.tile_timeout_seconds = 1e9;
    batch_sim sim({{1e12, 1e12}}, o, 1e9, 0.1, ps_link_model::fair, false, {}, r);
    const std::vector<product_operands> ops{{{1, false}, {2, false}}};
    const gemm_batch_sim batch{{{&p}, ops}};
    const auto issued = sim.issue(batch, fleet);
    auto end = sim.run(0, batch, issued, fleet, none, totals);
    EXPECT_TRUE(end);
    return std::make_pair(end ? *end : -1.0, totals.ps_op_seconds);
  };
  const auto [free_end, free_work] = run(ps_op_rates::none());
  EXPECT_EQ(free_work, 0.0);
  auto slow = round_rates();
  slow.op_seconds = 1e-3;  // enough to dwarf the devices' time
  const auto w = ps_plan_work(p, slow, false);
  const auto [slow_end, slow_work] = run(slow);
  EXPECT_NEAR(slow_work, w.total(), 1e-12);
  // Every tile's issue comes before the last task leaves; the last result
  // is checked after it arrives.
  double issued_all = 0;
  for (double x : w.issue) issued_all += x;
  EXPECT_GE(slow_end, free_end + issued_all + w.result.back());
  EXPECT_LE(slow_end, free_end + w.total() + 1e-12);
  auto faster = slow;
  faster.check_rate *= 10;
  faster.copy_rate *= 10;
  EXPECT_LE(run(faster).first, slow_end);
}
