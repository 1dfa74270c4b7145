// The device-process model shared by the planner and the simulator: the
// PS's scheduled link, pipelined devices, attention tiles, bf16 on the wire
// and batches late relative to their predictions. Each piece is checked on
// a case small enough to compute by hand, then the planner's predictions
// against the simulator's replay of the same plans.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "actors/planner/attention_plan.hpp"
#include "actors/planner/cost_model.hpp"
#include "actors/planner/grid_search.hpp"
#include "actors/planner/step_gemms.hpp"
#include "actors/ps/engine/tile_schedule.hpp"
#include "actors/simulator/baselines/asteroid.hpp"
#include "actors/simulator/baselines/data_parallel.hpp"
#include "actors/simulator/batch_sim.hpp"
#include "actors/simulator/cleave_sim.hpp"
#include "actors/simulator/model_footprint.hpp"
#include "actors/simulator/scheduled_link.hpp"
#include "training/models/model.hpp"

using namespace cleave;

namespace {

device_profile profile(double flops, double down, double up, double latency,
                       uint64_t memory = 8'000'000'000) {
  device_profile p;
  p.name = "test";
  p.flops = flops;
  p.memory_bytes = memory;
  p.downlink = down;
  p.uplink = up;
  p.latency = latency;
  return p;
}

std::vector<device_view> views_of(const std::vector<device_profile>& fleet) {
  std::vector<device_view> out;
  for (size_t i = 0; i < fleet.size(); ++i) out.push_back({static_cast<int32_t>(i), fleet[i], 0});
  return out;
}

// Runs the finish events of `link` until it is idle; returns each flow's end.
std::vector<double> drain(scheduled_link& link, size_t flows) {
  std::vector<double> end(flows, -1);
  std::vector<uint32_t> done;
  while (link.active() > 0) {
    const double at = link.next_finish();
    done.clear();
    link.finish_due(at, done);
    for (uint32_t f : done) end[f] = at;
  }
  return end;
}

}  // namespace

TEST(scheduled_link, serves_by_priority_each_at_its_cap_and_the_rest_wait) {
  // 100 B/s; caps 60: the first gets 60, the second the 40 left, the third
  // waits. Priorities put flow 2 first whatever the order of arrival.
  scheduled_link link(100, 3);
  link.start(0, 0, 120, 60, 5);
  link.start(0, 1, 120, 60, 9);
  link.start(0, 2, 120, 60, 1);
  EXPECT_DOUBLE_EQ(link.rate(2), 60);
  EXPECT_DOUBLE_EQ(link.rate(0), 40);
  EXPECT_DOUBLE_EQ(link.rate(1), 0);
  const auto end = drain(link, 3);
  // Flow 2 ends at 2 s; then 0 (40 left) runs at 60 with 1 at 40: 0 ends at
  // 2 + 40/60; 1 had 120 - 40 x 2/3 left and then runs alone at 60.
  EXPECT_NEAR(end[2], 2.0, 1e-9);
  EXPECT_NEAR(end[0], 2.0 + 40.0 / 60, 1e-9);
  const double left = 120 - 40 * (40.0 / 60);
  EXPECT_NEAR(end[1], end[0] + left / 60, 1e-9);
}

TEST(scheduled_link, a_cancelled_flow_gives_its_rate_to_the_next) {
  scheduled_link link(100, 2);
  link.start(0, 0, 1000, 100, 0);
  link.start(0, 1, 100, 100, 1);
  EXPECT_DOUBLE_EQ(link.rate(1), 0);
  link.cancel(1, 0);
  EXPECT_FALSE(link.running(0));
  EXPECT_DOUBLE_EQ(link.rate(1), 100);
  EXPECT_NEAR(drain(link, 2)[1], 2.0, 1e-9);
}

TEST(pipeline_depth, is_what_memory_holds_beside_the_cache_between_one_and_three) {
  EXPECT_EQ(pipeline_depth(8'000'000'000, 1'000'000'000, 1'000'000'000), 3u);
  EXPECT_EQ(pipeline_depth(4'000'000'000, 1'000'000'000, 1'500'000'000), 2u);
  EXPECT_EQ(pipeline_depth(1'000'000'000, 500'000'000, 2'000'000'000), 1u);  // never below one
  EXPECT_EQ(pipeline_depth(100, 200, 10), 1u);
}

TEST(pass_tile, a_pipelined_device_overlaps_the_next_download_with_the_last_upload) {
  // 1 s down, 1 s compute, 1 s up each, no latency: whole tiles take 3 s
  // each; pipelined, the second ends 1 s after the first.
  const device_stages idle;
  const auto one = pass_tile(0, 1, 1, 1, idle, 1, 1, 1, -1, true);
  EXPECT_DOUBLE_EQ(one.finish, 3);
  EXPECT_DOUBLE_EQ(pass_tile(0, 1, 1, 1, one.after, 1, 1, 1, -1, true).finish, 4);
  const auto whole = pass_tile(0, 1, 1, 1, idle, 1, 1, 1, -1, false);
  EXPECT_DOUBLE_EQ(pass_tile(0, 1, 1, 1, whole.after, 1, 1, 1, -1, false).finish, 6);
  // Cut through: operands the PS finishes sending at 5 s arrive then.
  EXPECT_DOUBLE_EQ(pass_tile(0.5, 1, 1, 1, idle, 1, 1, 1, 5, true).finish, 5 + 0.5 + 1 + 1 + 0.5);
}

TEST(attention_tiles, cost_what_flash_attention_moves_and_computes) {
  gemm_problem g;
  g.m = 8;   // pairs
  g.n = 64;  // sequence
  g.k = 16;  // head dimension
  g.element_bytes = g.result_element_bytes = 2;
  const auto fwd = attention_tile(tile_op::attention_forward, g, 2);
  EXPECT_EQ(fwd.down, 2u * 3 * 2 * 64 * 16);          // Q, K, V in bf16
  EXPECT_EQ(fwd.up, 2u * 2 * 64 * 16 + 4u * 2 * 64);  // O in bf16, log of sums in fp32
  EXPECT_DOUBLE_EQ(fwd.flops, 2 * (2.0 * 64 * 64 * 16) * 2);
  const auto bwd = attention_tile(tile_op::attention_backward, g, 2);
  EXPECT_EQ(bwd.down, 2u * 4 * 2 * 64 * 16 + 4u * 2 * 2 * 64);
  EXPECT_EQ(bwd.up, 2u * 3 * 2 * 64 * 16);
  EXPECT_DOUBLE_EQ(bwd.flops, 5 * (2.0 * 64 * 64 * 16) * 2);
  // bf16-operands: the same bytes down, results (O; dQ, dK, dV) in fp32.
  g.result_element_bytes = 4;
  EXPECT_EQ(attention_tile(tile_op::attention_forward, g, 2).down, fwd.down);
  EXPECT_EQ(attention_tile(tile_op::attention_forward, g, 2).up, 4u * 2 * 64 * 16 + 4u * 2 * 64);
  EXPECT_EQ(attention_tile(tile_op::attention_backward, g, 2).up, 4u * 3 * 2 * 64 * 16);
}

TEST(attention_tiles, fused_products_keep_the_step_s_forward_flops_and_its_other_products) {
  const model_config cfg = *gpt_preset("small", 256, 64);
  const auto per_head = step_gemms(cfg, 4);
  const auto fused = fuse_attention(per_head, cfg, 4);
  double head_fwd = 0, fused_fwd = 0;
  size_t others = 0, fused_others = 0;
  for (const auto& g : per_head) {
    if (g.problem.role == gemm_role::attn_scores || g.problem.role == gemm_role::attn_values) head_fwd += g.flops();
    else if (g.problem.role != gemm_role::attn_grad) ++others;
  }
  for (const auto& g : fused) {
    if (g.op == tile_op::attention_forward) fused_fwd += g.flops();
    else if (g.op == tile_op::gemm) ++fused_others;
    if (g.forward >= 0) {  // backward products still name their forward product
      const auto& f = fused[static_cast<size_t>(g.forward)];
      EXPECT_EQ(f.problem.role, gemm_role::forward) << g.name;
      EXPECT_EQ(f.problem.m, g.problem.role == gemm_role::grad_weight ? g.problem.k : g.problem.m) << g.name;
    }
  }
  EXPECT_DOUBLE_EQ(fused_fwd, head_fwd);
  EXPECT_EQ(fused_others, others);
  EXPECT_EQ(fused.size(), others + 2);
}

TEST(attention_tiles, the_plan_splits_when_the_fleet_beats_the_ps_and_not_otherwise) {
  gemm_problem g;
  g.m = 64;
  g.n = 256;
  g.k = 64;
  planner_config cfg;
  cfg.pipelined_devices = true;
  cfg.ps_flops = 1e9;
  const auto fleet = views_of(std::vector<device_profile>(16, profile(1e11, 1e8, 5e7, 0.001)));
  const plan p = plan_attention(tile_op::attention_forward, g, fleet, cfg);
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.op, tile_op::attention_forward);
  // Every pair exactly once, in order.
  int64_t next = 0;
  for (const auto& a : p.tiles) {
    EXPECT_EQ(a.t.m0, next);
    next = a.t.m1;
  }
  EXPECT_EQ(next, g.m);
  EXPECT_EQ(p.bytes_down, attention_tile(tile_op::attention_forward, g, g.m).down);
  EXPECT_LT(p.predicted_seconds, p.local_seconds);
  // A PS a thousand times faster keeps it.
  cfg.ps_flops = 1e15;
  EXPECT_TRUE(plan_attention(tile_op::attention_forward, g, fleet, cfg).local);
}

TEST(tile_schedule, a_batch_is_late_relative_to_its_prediction_not_after_a_fixed_time) {
  schedule_options o;
  o.tile_timeout_seconds = 30;
  o.timeout_factor = 4;
  o.speculate_factor = 0;
  batch_view view(1, std::vector<policy_tile>(1));
  view[0][0].holders = {0};
  const tile_policy policy({{0, 1'000'000'000}});
  // Predicted 100 s: not late at 31 s of silence, late after 4 x 100 + 30.
  tile_schedule slow(o, 0, 100, view, policy);
  EXPECT_DOUBLE_EQ(slow.deadline(), 430);
  EXPECT_TRUE(slow.on_clock(31, view, policy).empty());
  auto acts = slow.on_clock(430, view, policy);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0].kind, schedule_action_kind::timed_out);
  // Predicted 1 ms: 30 s of silence (after 4 ms), as before.
  view[0][0].holders = {0};
  tile_schedule quick(o, 0, 0.001, view, policy);
  EXPECT_DOUBLE_EQ(quick.deadline(), 30.004);
  // Progress moves the deadline: a result at 29 s gives 30 s more.
  quick.result(29, 0, 0, 0);
  EXPECT_DOUBLE_EQ(quick.deadline(), 59);
}

TEST(baselines, move_the_wire_s_precision_like_cleave) {
  const model_config cfg = *gpt_preset("small", 256, 64);
  const auto fp = footprint_of(cfg);
  const auto fleet = views_of(std::vector<device_profile>(8, profile(1e11, 1e7, 1e7, 0.001)));
  const auto fp32 = plan_data_parallel(fp, 16, fleet, 4);
  const auto bf16 = plan_data_parallel(fp, 16, fleet, 2);
  ASSERT_TRUE(fp32.fits && bf16.fits);
  EXPECT_NEAR(bf16.communication, fp32.communication / 2, 0.05 * fp32.communication);
  const auto a32 = plan_asteroid(fp, 16, fleet, 4), a16 = plan_asteroid(fp, 16, fleet, 2);
  ASSERT_TRUE(a32.fits && a16.fits);
  EXPECT_LT(a16.seconds, a32.seconds);
}

// The planner predicts what the simulator replays: device processes
// pipelining their tiles and a PS sending in plan order, on a binding and
// on an ample PS link.
TEST(device_process_model, the_simulator_replays_the_plans_within_ten_percent) {
  for (double egress : {2e7, 1e10}) {
    sim_config cfg;
    cfg.model = *gpt_preset("small", 256, 64);
    cfg.batch = 8;
    for (int i = 0; i < 8; ++i) cfg.fleet.push_back(profile(2e10, 1e8, 2e7, 0.002));
    cfg.planner.ps_flops = 1e9;
    cfg.planner.ps_egress = cfg.planner.ps_ingress = egress;
    cfg.planner.pipelined_devices = true;
    cfg.shards = {{egress, egress}};
    cfg.egress_model = ps_link_model::scheduled;
    cfg.attention_tiles = true;
    cfg.wire = wire_precision::bf16;
    // The plans' predictions leave the PS's work per tile to
    // ps_tile_seconds (0 here): so does the simulated PS.
    cfg.ps_ops = ps_op_rates::none();
    churn_feed none;
    auto res = simulate_cleave(cfg, none);
    ASSERT_TRUE(res);
    EXPECT_GT(res->totals.tiles, 0u) << "nothing split: the comparison proves little";
    const auto& st = res->steps[0];
    EXPECT_NEAR(st.device_gemms / st.predicted_device_gemms, 1.0, 0.10) << "egress " << egress;
    bool attention_split = false;
    for (const auto& p : res->products) attention_split |= p.name == "attention forward" && p.split;
    EXPECT_TRUE(attention_split || egress < 1e9);
  }
}

TEST(device_process_model, bf16_halves_the_bytes_of_the_same_plans) {
  sim_config cfg;
  cfg.model = *gpt_preset("small", 256, 64);
  cfg.batch = 8;
  for (int i = 0; i < 8; ++i) cfg.fleet.push_back(profile(1e10, 1e8, 2e7, 0.002));
  cfg.planner.ps_flops = 1e9;
  cfg.planner.ps_egress = cfg.planner.ps_ingress = 1e12;  // plans that do not depend on bytes
  cfg.shards = {{1e12, 1e12}};
  churn_feed none;
  auto fp32 = simulate_cleave(cfg, none);
  cfg.wire = wire_precision::bf16;
  auto bf16 = simulate_cleave(cfg, none);
  ASSERT_TRUE(fp32 && bf16);
  ASSERT_GT(fp32->totals.tiles, 0u);
  uint64_t down32 = 0, down16 = 0;
  for (auto b : fp32->totals.shard_bytes_down) down32 += b;
  for (auto b : bf16->totals.shard_bytes_down) down16 += b;
  EXPECT_EQ(fp32->totals.tiles, bf16->totals.tiles);
  EXPECT_EQ(down16 * 2, down32);
}
