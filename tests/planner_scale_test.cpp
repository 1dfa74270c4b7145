// The cost model at scale: device selection, PS shards' links, whole-step
// prediction, and the properties every prediction must keep (exact on
// hand-computable cases, monotone, above physical lower bounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "actors/planner/device_selection.hpp"
#include "actors/planner/grid_search.hpp"
#include "actors/planner/step_prediction.hpp"
#include "schema/errors.hpp"
#include "schema/profile.hpp"
#include "tests/model_fixtures.hpp"
#include "training/models/model.hpp"

using namespace cleave;

namespace {

device_profile prof(double flops, double memory, double down, double up, double latency) {
  return device_profile{"dev", flops, static_cast<uint64_t>(memory), down, up, latency};
}

std::vector<device_view> fleet(int n, const device_profile& p) {
  std::vector<device_view> out;
  for (int i = 0; i < n; ++i) out.push_back(device_view{i, p, 0});
  return out;
}

// Seeded fleets of mixed devices: rates spread over 16x, memory over 8x.
std::vector<device_view> random_fleet(std::mt19937_64& rng, int n, int32_t first_id = 0) {
  auto logu = [&](double lo, double hi) {
    return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
  };
  std::vector<device_view> out;
  for (int i = 0; i < n; ++i)
    out.push_back(device_view{first_id + i,
                              prof(logu(1e10, 1.6e11), logu(1e9, 8e9), logu(2.5e7, 4e8),
                                   logu(5e6, 8e7), logu(0.001, 0.02)),
                              0});
  return out;
}

gemm_problem random_problem(std::mt19937_64& rng) {
  auto logi = [&](double lo, double hi) {
    return static_cast<int64_t>(
        std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng)));
  };
  return gemm_problem{logi(512, 32768), logi(512, 8192), logi(512, 16384),
                      static_cast<gemm_role>(rng() % 3)};
}

double fleet_flops(const std::vector<device_view>& devices) {
  double total = 0;
  for (const auto& d : devices) total += d.profile.flops;
  return total;
}

std::map<int32_t, double> flops_per_device(const plan& p) {
  std::map<int32_t, double> out;
  for (const auto& a : p.tiles) out[a.device] += static_cast<double>(a.t.flops());
  return out;
}

// A PS far slower than the devices, with links that never bind.
planner_config slow_ps() {
  planner_config cfg;
  cfg.ps_flops = 1e8;
  cfg.ps_egress = cfg.ps_ingress = 1e15;
  cfg.max_tiles_per_device = 1;
  return cfg;
}

}  // namespace

// ---- Hand-computable cases: exact makespans. ----

TEST(cost_model_exact, one_device_one_tile) {
  // 256^3 on 1 GFLOP/s with 100 MB/s links and 1 ms one way:
  // 2 * 0.001 + 4 * 2 * 256^2 / 1e8 + 2 * 256^3 / 1e9 + 4 * 256^2 / 1e8.
  const auto devices = fleet(1, prof(1e9, 1e9, 1e8, 1e8, 0.001));
  const plan p = make_plan(gemm_problem{256, 256, 256}, devices, slow_ps());
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.tiles.size(), 1u);
  EXPECT_DOUBLE_EQ(p.predicted_seconds, 0.002 + 0.00524288 + 0.033554432 + 0.00262144);
}

TEST(cost_model_exact, two_devices_halve_the_product) {
  // 512x256x256 on two such devices: one 256^3 tile each, the same time.
  const auto devices = fleet(2, prof(1e9, 1e9, 1e8, 1e8, 0.001));
  const plan p = make_plan(gemm_problem{512, 256, 256}, devices, slow_ps());
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.devices_used, 2);
  EXPECT_DOUBLE_EQ(p.predicted_seconds, 0.002 + 0.00524288 + 0.033554432 + 0.00262144);
}

TEST(cost_model_exact, the_ps_link_sets_the_time_when_it_binds) {
  // At 1 MB/s of PS egress the fewest bytes win: the whole product on one
  // device sends A and B once, 4 * (512 * 256 + 256 * 256) bytes.
  planner_config cfg = slow_ps();
  cfg.ps_flops = 1e7;
  cfg.ps_egress = 1e6;
  const auto devices = fleet(2, prof(1e9, 1e9, 1e8, 1e8, 0.001));
  const plan p = make_plan(gemm_problem{512, 256, 256}, devices, cfg);
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_EQ(p.tiles.size(), 1u);
  EXPECT_EQ(p.bound, plan_bound::ps_egress);
  EXPECT_DOUBLE_EQ(p.predicted_seconds, 786432.0 / 1e6);
}

TEST(cost_model_exact, a_shard_with_its_own_host_keeps_its_whole_link) {
  planner_config cfg;
  cfg.ps_egress = 1e9;
  cfg.ps_ingress = 2e9;
  const auto devices = fleet(4, prof(1e10, 1e9, 1e8, 1e8, 0.001));
  // Shards as threads of one process (one link) split it; shards on hosts
  // of their own (a link each) do not; a lone planner never counts on more
  // than one link.
  EXPECT_DOUBLE_EQ(fair_share(devices, cfg, 4).cfg.ps_egress, 0.25e9);
  cfg.ps_links = 4;
  EXPECT_DOUBLE_EQ(fair_share(devices, cfg, 4).cfg.ps_egress, 1e9);
  EXPECT_DOUBLE_EQ(fair_share(devices, cfg, 4).cfg.ps_ingress, 2e9);
  EXPECT_DOUBLE_EQ(fair_share(devices, cfg, 4).devices[0].profile.flops, 2.5e9);
  cfg.ps_links = 2;
  EXPECT_DOUBLE_EQ(fair_share(devices, cfg, 4).cfg.ps_egress, 0.5e9);
  EXPECT_DOUBLE_EQ(fair_share(devices, cfg, 1).cfg.ps_egress, 1e9);
}

TEST(cost_model_exact, an_unreliable_device_costs_its_expected_rework) {
  // p = 0.5: one failure expected per success, each costing the attempt and
  // the detection delay: 2 t + 1 s with a 1 s delay.
  device_view d{0, prof(1e9, 1e9, 1e8, 1e8, 0.001), 0, 0.5};
  const tile t{0, 256, 0, 256, 0, 256};
  const double reliable = predict_tile(t, gemm_element_bytes, gemm_element_bytes, d.profile, false, false).seconds;
  const double expected = predict_tile(t, gemm_element_bytes, gemm_element_bytes, expected_profile(d, 1.0), false, false).seconds;
  EXPECT_NEAR(expected, 2 * reliable + 1.0, 1e-12);
  d.failure_probability = 0;
  EXPECT_EQ(predict_tile(t, gemm_element_bytes, gemm_element_bytes, expected_profile(d, 1.0), false, false).seconds, reliable);
  d.failure_probability = 1;
  EXPECT_FALSE(usable(expected_profile(d, 1.0)));
}

TEST(cost_model_exact, step_is_the_sum_of_its_products_and_ps_ops) {
  // A tiny mlp whose products all stay on the PS (below the split
  // threshold): every part is the PS's, by its FLOP/s and memory bandwidth.
  model_config cfg;
  cfg.kind = "mlp";
  cfg.inputs = 32;
  cfg.hidden = {16};
  cfg.classes = 4;
  planner_config pc;
  pc.ps_flops = 1e9;
  pc.ps_memory_bandwidth = 1e8;
  const auto s = predict_step(cfg, 8, fleet(4, prof(1e10, 1e9, 1e8, 1e8, 0.001)), pc, 1);
  double gemms = 0;
  for (const auto& pp : s.products) {
    EXPECT_TRUE(pp.p.local);
    gemms += pp.gemm.flops() / pc.ps_flops;
  }
  double ops = 0;
  for (const auto& op : ps_local_ops(cfg, 8)) ops += std::max(op.flops / 1e9, op.bytes / 1e8);
  EXPECT_NEAR(s.parts.ps_local_compute, gemms, 1e-15);
  EXPECT_NEAR(s.parts.ps_memory_ops, ops, 1e-15);
  EXPECT_DOUBLE_EQ(s.seconds, s.parts.ps_local_compute + s.parts.ps_memory_ops);
  EXPECT_EQ(s.devices_used, 0);
  // AdamW touches every parameter 9 times: 4 * 9 * (32*16 + 16 + 16*4 + 4) bytes.
  const auto ops_list = ps_local_ops(cfg, 8);
  const auto adamw = std::find_if(ops_list.begin(), ops_list.end(),
                                  [](const ps_op& op) { return op.name == "adamw"; });
  ASSERT_NE(adamw, ops_list.end());
  EXPECT_DOUBLE_EQ(adamw->bytes, 4.0 * 9 * 596);
}

TEST(ps_local_work, parameter_count_matches_the_built_models) {
  local_gemm_engine<float> eng;
  auto small = gpt_preset("small", 256, 64);
  ASSERT_TRUE(small);
  model_config wide = cleave::testing::tiny_mlp();
  wide.hidden = {784, 512, 256};  // odd and even layers, so every Megatron pair counts
  for (const auto& cfg : {*small, cleave::testing::tiny_gpt(), cleave::testing::tiny_mlp(), wide}) {
    auto m = make_model(cfg, 1, eng);
    ASSERT_TRUE(m);
    EXPECT_EQ(parameter_count(cfg), (*m)->parameter_count()) << to_string(cfg);
  }
}

// ---- Selection. ----

TEST(device_selection, drops_a_device_that_cannot_hold_a_minimal_tile) {
  planner_config cfg;
  const gemm_problem g{8192, 4096, 4096};
  // A minimal tile: 16 x 16 edges with all of K: 4 * (16*4096 * 2 + 256).
  EXPECT_EQ(minimal_tile_bytes(g, cfg), 4u * (16 * 4096 * 2 + 256));
  auto devices = fleet(4, prof(1e11, 4e9, 1e8, 1e8, 0.001));
  devices[2].profile.memory_bytes = minimal_tile_bytes(g, cfg) - 1;
  const auto sel = select_devices(g, devices, cfg);
  EXPECT_EQ(sel.too_small, 1);
  EXPECT_EQ(sel.ranked.size(), 3u);
  for (const auto& d : sel.ranked) EXPECT_NE(d.id, 2);
  const plan p = make_plan(g, devices, cfg);
  ASSERT_FALSE(p.local) << p.reason;
  for (const auto& a : p.tiles) EXPECT_NE(a.device, 2);
  EXPECT_NE(p.reason.find("1 that cannot hold a minimal tile"), std::string::npos) << p.reason;
}

TEST(device_selection, ranks_by_expected_time_with_reliability) {
  planner_config cfg;
  const gemm_problem g{8192, 4096, 4096};
  auto devices = fleet(3, prof(1e11, 4e9, 1e8, 1e8, 0.001));
  devices[0].failure_probability = 0.5;  // the same device, half its tiles lost
  devices[1].profile.flops = 2e11;
  const auto sel = select_devices(g, devices, cfg);
  ASSERT_EQ(sel.ranked.size(), 3u);
  EXPECT_EQ(sel.ranked[0].id, 1);
  EXPECT_EQ(sel.ranked[1].id, 2);
  EXPECT_EQ(sel.ranked[2].id, 0);
  EXPECT_DOUBLE_EQ(sel.ranked[2].profile.flops, 0.5e11);
  // The unreliable device gets less work than its twin.
  const auto flops = flops_per_device(make_plan(g, devices, cfg));
  EXPECT_LT(flops.count(0) ? flops.at(0) : 0.0, flops.at(2));
}

TEST(device_selection, leaves_out_devices_that_lengthen_the_plan) {
  // Over seeded fleets: whenever make_plan leaves out its slowest devices,
  // its plan beats the search over every device, and no tile goes to a
  // device it left out.
  std::mt19937_64 rng(15);
  int left_out = 0;
  for (int iter = 0; iter < 120; ++iter) {
    auto devices = random_fleet(rng, 2 + static_cast<int>(rng() % 40));
    planner_config cfg;
    cfg.ps_egress = cfg.ps_ingress = std::exp(std::uniform_real_distribution<double>(
        std::log(1e8), std::log(1e10))(rng));
    const gemm_problem g = random_problem(rng);
    const plan p = make_plan(g, devices, cfg);
    if (p.reason.find("slowest") == std::string::npos) continue;
    ++left_out;
    const auto sel = select_devices(g, devices, cfg);
    const plan all = search_grids(g, sel.ranked, cfg);
    EXPECT_LT(plan_seconds(p), plan_seconds(all)) << p.reason;
    ASSERT_FALSE(p.local);
    std::map<int32_t, size_t> rank;
    for (size_t i = 0; i < sel.ranked.size(); ++i) rank[sel.ranked[i].id] = i;
    size_t worst = 0;
    for (const auto& a : p.tiles) worst = std::max(worst, rank.at(a.device));
    EXPECT_LT(worst, sel.ranked.size() - 1) << "the slowest device got a tile";
  }
  EXPECT_GT(left_out, 0) << "no seeded fleet had a device worth leaving out";
  std::printf("[ select   ] %d of 120 seeded plans left out their slowest devices\n", left_out);
}

// ---- Monotonicity on seeded fleets. ----

TEST(monotonicity, a_faster_device_never_gets_fewer_flops) {
  // Within a plan: a device at least as good as another in every figure
  // gets at least its FLOPs.
  std::mt19937_64 rng(7);
  int pairs = 0;
  for (int iter = 0; iter < 60; ++iter) {
    auto devices = random_fleet(rng, 4 + static_cast<int>(rng() % 28));
    // Give every device a twin that is better in one figure.
    const size_t n = devices.size();
    for (size_t i = 0; i < n; ++i) {
      device_view twin = devices[i];
      twin.id = static_cast<int32_t>(n + i);
      twin.profile.flops *= 1.5;
      devices.push_back(twin);
    }
    planner_config cfg;
    const gemm_problem g = random_problem(rng);
    const plan p = make_plan(g, devices, cfg);
    if (p.local) continue;
    const auto flops = flops_per_device(p);
    auto of = [&](int32_t id) { return flops.count(id) ? flops.at(id) : 0.0; };
    for (size_t i = 0; i < n; ++i, ++pairs)
      EXPECT_GE(of(static_cast<int32_t>(n + i)), of(static_cast<int32_t>(i)))
          << "device " << i << " and its faster twin; " << p.reason;
  }
  EXPECT_GT(pairs, 100);
}

TEST(monotonicity, more_bandwidth_never_predicts_slower) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 60; ++iter) {
    auto devices = random_fleet(rng, 2 + static_cast<int>(rng() % 30));
    planner_config cfg;
    cfg.ps_egress = cfg.ps_ingress = 5e8;
    const gemm_problem g = random_problem(rng);
    const double before = plan_seconds(make_plan(g, devices, cfg));
    planner_config wider = cfg;
    wider.ps_egress *= 2;
    wider.ps_ingress *= 2;
    EXPECT_LE(plan_seconds(make_plan(g, devices, wider)), before) << "PS link, iter " << iter;
    auto faster = devices;
    for (auto& d : faster) {
      d.profile.downlink *= 2;
      d.profile.uplink *= 2;
    }
    EXPECT_LE(plan_seconds(make_plan(g, faster, cfg)), before) << "device links, iter " << iter;
  }
}

TEST(monotonicity, more_devices_never_predict_slower_after_selection) {
  std::mt19937_64 rng(13);
  for (int iter = 0; iter < 60; ++iter) {
    const int n = 2 + static_cast<int>(rng() % 30);
    auto devices = random_fleet(rng, n);
    auto more = devices;
    for (const auto& d : random_fleet(rng, 1 + static_cast<int>(rng() % 30), n)) more.push_back(d);
    planner_config cfg;
    cfg.ps_egress = cfg.ps_ingress = 1e9;
    const gemm_problem g = random_problem(rng);
    EXPECT_LE(plan_seconds(make_plan(g, more, cfg)), plan_seconds(make_plan(g, devices, cfg)))
        << n << " -> " << more.size() << " devices, iter " << iter;
  }
}

// ---- Physical lower bounds. ----

TEST(lower_bounds, no_plan_beats_the_fleets_flops_or_the_ps_link) {
  std::mt19937_64 rng(17);
  int split = 0;
  for (int iter = 0; iter < 80; ++iter) {
    auto devices = random_fleet(rng, 2 + static_cast<int>(rng() % 60));
    planner_config cfg;
    cfg.ps_egress = cfg.ps_ingress = std::exp(std::uniform_real_distribution<double>(
        std::log(1e8), std::log(1e11))(rng));
    const gemm_problem g = random_problem(rng);
    const plan p = make_plan(g, devices, cfg);
    if (p.local) continue;
    ++split;
    // Every FLOP on some device; every block of A and B leaves the PS once.
    EXPECT_GE(p.predicted_seconds, g.flops() / fleet_flops(devices));
    const double blocks = 4.0 * (double(g.m) * double(g.k) + double(g.k) * double(g.n));
    EXPECT_GE(p.predicted_seconds, blocks / cfg.ps_egress);
    EXPECT_GE(static_cast<double>(p.bytes_down), blocks);
  }
  EXPECT_GT(split, 40);
}

TEST(lower_bounds, no_step_beats_the_fleets_flops_or_the_ps_links) {
  auto cfg = gpt_preset("opt-125m", 50272, 512);
  ASSERT_TRUE(cfg);
  std::mt19937_64 rng(19);
  for (int32_t shards : {1, 2, 4}) {
    const auto devices = random_fleet(rng, 64);
    planner_config pc;
    pc.ps_egress = pc.ps_ingress = 1e9;
    pc.ps_links = shards;
    const auto s = predict_step(*cfg, 8, devices, pc, shards);
    // Each product runs on the devices or the PS's shards.
    const double rate = fleet_flops(devices) + shards * pc.ps_flops;
    EXPECT_GE(s.seconds, s.gemm_flops / rate);
    double split_flops = 0, must_send = 0;
    for (const auto& pp : s.products) {
      if (pp.p.local) continue;
      const auto& g = pp.slice;
      const double count = static_cast<double>(pp.gemm.count);
      split_flops += g.flops() * count;
      // A slice's A and B blocks, once, over its shard's link; a mirrored
      // weight gradient finds W (dX's B) or X (dW's A) on its devices.
      const double a = 4.0 * double(g.m) * double(g.k), b = 4.0 * double(g.k) * double(g.n);
      const double blocks = !pp.mirrored                         ? a + b
                            : g.role == gemm_role::grad_input ? a
                                                              : b;
      EXPECT_GE(pp.seconds, blocks / pc.ps_egress) << pp.gemm.name;
      EXPECT_GE(pp.seconds, g.flops() / (fleet_flops(devices) / shards)) << pp.gemm.name;
      must_send += blocks * count;
    }
    EXPECT_GT(split_flops, 0) << shards << " shards";
    EXPECT_GE(s.seconds, must_send / pc.ps_egress);  // per shard: each sends its slices
    EXPECT_NEAR(s.seconds, s.parts.total(), 1e-9 * s.seconds);
    ASSERT_EQ(s.shard_bytes_down.size(), static_cast<size_t>(shards));
    EXPECT_GE(static_cast<double>(s.shard_bytes_down[0]), must_send);
  }
}

TEST(step_prediction, more_shards_with_their_own_links_predict_no_slower) {
  auto cfg = gpt_preset("opt-1.3b", 50272, 512);
  ASSERT_TRUE(cfg);
  const auto devices = fleet(256, prof(3e12, 4e9, 1e8, 5e6, 0.005));
  planner_config pc;
  double before = 0;
  for (int32_t shards : {1, 2, 4}) {
    pc.ps_links = shards;
    const auto s = predict_step(*cfg, 16, devices, pc, shards);
    if (shards > 1) {
      EXPECT_LT(s.parts.ps_egress, before) << shards;
    }
    before = s.parts.ps_egress;
    EXPECT_EQ(s.products.size(), step_gemms(*cfg, 16).size());
  }
}

TEST(step_prediction, more_devices_never_predict_a_slower_step) {
  auto cfg = gpt_preset("opt-350m", 50272, 256);
  ASSERT_TRUE(cfg);
  std::mt19937_64 rng(23);
  auto devices = random_fleet(rng, 8);
  double before = std::numeric_limits<double>::infinity();
  for (int more : {8, 16, 32, 64, 128}) {
    for (const auto& d : random_fleet(rng, more, static_cast<int32_t>(devices.size())))
      devices.push_back(d);
    const auto s = predict_step(*cfg, 4, devices, planner_config{}, 1);
    EXPECT_LE(s.seconds, before) << devices.size() << " devices";
    before = s.seconds;
  }
}

TEST(cost_model_exact, pipelined_devices_overlap_transfers_with_compute) {
  // One device, two 256^3 tiles (512x256x256 cut in two along M), B cached
  // for the second: serial 2 * (2L + A/dl + C/ul + F/f) + B/dl; pipelined,
  // the second tile's A arrives while the first computes, and its result
  // leaves after the first's.
  const auto devices = fleet(1, prof(1e9, 1e9, 1e8, 1e8, 0.001));
  const planner_config cfg = slow_ps();
  plan p;
  p.local = false;
  p.tiles = {assignment{tile{0, 256, 0, 256, 0, 256}, 0, 0, false, false},
             assignment{tile{256, 512, 0, 256, 0, 256}, 0, 0, false, true}};
  p.bytes_down = 3 * 4 * 256 * 256;
  p.bytes_up = 2 * 4 * 256 * 256;
  const double block = 4.0 * 256 * 256 / 1e8, compute = 2.0 * 256 * 256 * 256 / 1e9;
  const double serial = 2 * (0.002 + block + block + compute) + block;
  EXPECT_DOUBLE_EQ(predict_tile(p.tiles[0].t, gemm_element_bytes, gemm_element_bytes, devices[0].profile, false, false).seconds +
                       predict_tile(p.tiles[1].t, gemm_element_bytes, gemm_element_bytes, devices[0].profile, false, true).seconds,
                   serial);
  EXPECT_DOUBLE_EQ(serial, 0.084216064);
  // Down: 2 blocks by 0.00524288, 3 by 0.00786432; compute 0.00624288 to
  // 0.039797312, then to 0.073351744; up 0.039797312 to 0.042418752, then
  // 0.073351744 to 0.075973184; the last result arrives 1 ms later.
  EXPECT_DOUBLE_EQ(pipelined_seconds(p, devices, cfg), 0.076973184);
}

TEST(monotonicity, pipelined_devices_never_predict_slower_than_serial_ones) {
  std::mt19937_64 rng(29);
  for (int iter = 0; iter < 40; ++iter) {
    auto devices = random_fleet(rng, 2 + static_cast<int>(rng() % 30));
    planner_config cfg;
    const plan p = make_plan(random_problem(rng), devices, cfg);
    if (p.local) continue;
    EXPECT_LE(pipelined_seconds(p, devices, cfg), p.predicted_seconds);
  }
}

TEST(step_prediction, ten_thousand_devices_plan_in_seconds) {
  auto cfg = gpt_preset("opt-6.7b", 256, 512);
  ASSERT_TRUE(cfg);
  const auto devices = fleet(10000, prof(3e12, 4e9, 1e8, 5e6, 0.005));
  const auto t0 = std::chrono::steady_clock::now();
  const auto s = predict_step(*cfg, 128, devices, planner_config{}, 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ step     ] opt-6.7b, batch 128, 10000 devices: planned in %.2f s, step %.4g s\n",
              seconds, s.seconds);
  EXPECT_LT(seconds, 10.0);
  EXPECT_GT(s.devices_used, 0);
}

// ---- Fleet files for planning. ----

TEST(fleet_file, counts_describe_a_large_fleet_up_to_the_planning_cap) {
  const std::string big = R"({"devices": [{"name": "paper", "flops": 3e12, "memory_bytes": 4e9,
      "downlink": 1e8, "uplink": 5e6, "latency": 0.005, "count": 10000}]})";
  auto emulated = parse_fleet(big, "big.json");
  ASSERT_FALSE(emulated);
  EXPECT_NE(describe(emulated.error()).find("[1, 4096]"), std::string::npos)
      << describe(emulated.error());
  auto planned = parse_fleet(big, "big.json", max_described_fleet);
  ASSERT_TRUE(planned) << describe(planned.error());
  EXPECT_EQ(planned->size(), 10000u);
  // Refused before anything is allocated: a count past the cap, or entries
  // that add up past it.
  auto huge = parse_fleet(R"({"devices": [{"preset": "phone", "count": 1e12}]})", "huge.json",
                          max_described_fleet);
  ASSERT_FALSE(huge);
  EXPECT_NE(describe(huge.error()).find("count must be an integer in [1, " + std::to_string(max_described_fleet) + "]"),
            std::string::npos);
  auto sum = parse_fleet(R"({"devices": [{"preset": "phone", "count": 600000},
                                         {"preset": "vm", "count": 600000}]})",
                         "sum.json", max_described_fleet);
  ASSERT_FALSE(sum);
  EXPECT_NE(describe(sum.error()).find("more than " + std::to_string(max_described_fleet) + " devices"), std::string::npos);
}

// The PS's work per tile is a part of its own: each split product's tiles x
// ps_tile_seconds x its count, and the rest of the product's time goes where
// it went before (here, on a slow PS link, to the egress).
TEST(step_prediction, the_ps_work_per_tile_is_a_part_of_the_step) {
  auto cfg = gpt_preset("opt-125m", 256, 128);
  ASSERT_TRUE(cfg);
  const auto devices = fleet(64, prof(3e12, 4e9, 1e10, 1e10, 0.001));
  planner_config pc;
  pc.ps_flops = 1e9;  // slow enough that the large products split
  pc.ps_egress = pc.ps_ingress = 1e8;
  pc.ps_tile_seconds = 1e-3;
  const auto s = predict_step(*cfg, 16, devices, pc, 1);
  double per_tile = 0, split = 0;
  for (const auto& pp : s.products) {
    if (pp.p.local) continue;
    ++split;
    per_tile += static_cast<double>(pp.p.tiles.size()) * 1e-3 * static_cast<double>(pp.gemm.count);
  }
  ASSERT_GT(split, 0);
  EXPECT_NEAR(s.parts.ps_tiles, per_tile, 1e-9 * per_tile);
  EXPECT_GT(s.parts.ps_egress, 0);
  EXPECT_NEAR(s.seconds, s.parts.total(), 1e-9 * s.seconds);
}
