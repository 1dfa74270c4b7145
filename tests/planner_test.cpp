// The planner's pure core: tile cost model, grid search, assignment, mirrors
// (what bounds a plan: plan_bound_test.cpp; plans on a fleet that changes or
// is shared: replace_plan_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <random>

#include "actors/planner/grid_search.hpp"
#include "actors/planner/placement.hpp"
#include "actors/planner/speed_order.hpp"
#include "tests/planner_fixtures.hpp"

using namespace cleave;
using namespace cleave::testing;

namespace {

std::map<int32_t, double> flops_per_device(const plan& p) {
  std::map<int32_t, double> out;
  for (const auto& a : p.tiles) out[a.device] += static_cast<double>(a.t.flops());
  return out;
}

bool same_plan(const plan& x, const plan& y) {
  if (x.local != y.local || x.reason != y.reason || x.grid_m != y.grid_m || x.grid_n != y.grid_n ||
      x.grid_k != y.grid_k || x.tiles.size() != y.tiles.size() ||
      x.predicted_seconds != y.predicted_seconds || x.bytes_down != y.bytes_down ||
      x.bytes_up != y.bytes_up)
    return false;
  for (size_t i = 0; i < x.tiles.size(); ++i) {
    const auto &a = x.tiles[i], &b = y.tiles[i];
    if (!(a.t == b.t) || a.device != b.device || a.predicted_finish != b.predicted_finish ||
        a.a_cached != b.a_cached || a.b_cached != b.b_cached)
      return false;
  }
  return true;
}

}  // namespace

TEST(PlannerCost, PredictTileFollowsTheFormula) {
  tile t{0, 100, 0, 50, 0, 20};
  EXPECT_EQ(t.flops(), 2 * 100 * 50 * 20);
  auto p = prof(1e9, 1e9, 1e6, 2e5, 0.01);
  auto c = predict_tile(t, gemm_element_bytes, gemm_element_bytes, p, false, false);
  EXPECT_EQ(c.bytes_down, 4u * (100 * 20 + 20 * 50));
  EXPECT_EQ(c.bytes_up, 4u * 100 * 50);
  EXPECT_DOUBLE_EQ(c.seconds, 2 * 0.01 + 12000.0 / 1e6 + 200000.0 / 1e9 + 20000.0 / 2e5);
  auto ca = predict_tile(t, gemm_element_bytes, gemm_element_bytes, p, true, false);
  EXPECT_EQ(ca.bytes_down, 4u * 20 * 50);
  auto cb = predict_tile(t, gemm_element_bytes, gemm_element_bytes, p, false, true);
  EXPECT_EQ(cb.bytes_down, 4u * 100 * 20);
  auto both = predict_tile(t, gemm_element_bytes, gemm_element_bytes, p, true, true);
  EXPECT_EQ(both.bytes_down, 0u);
  EXPECT_DOUBLE_EQ(both.seconds, 2 * 0.01 + 200000.0 / 1e9 + 20000.0 / 2e5);
  EXPECT_EQ(tile_working_set(t), 4u * (100 * 20 + 20 * 50 + 100 * 50));
  EXPECT_TRUE(std::isinf(predict_tile(t, gemm_element_bytes, gemm_element_bytes, prof(0, 1e9, 1e6, 1e6, 0), false, false).seconds));
}

TEST(PlannerCost, ResultsCountAtTheirOwnWidth) {
  // --wire=bf16-operands: operands at 2 bytes an element, results at 4, in
  // a tile's cost and in a plan's bytes up (the simulator's per tile).
  tile t{0, 100, 0, 50, 0, 20};
  auto c = predict_tile(t, 2, 4, prof(1e9, 1e9, 1e6, 2e5, 0.01), false, false);
  EXPECT_EQ(c.bytes_down, 2u * (100 * 20 + 20 * 50));
  EXPECT_EQ(c.bytes_up, 4u * 100 * 50);
  EXPECT_DOUBLE_EQ(c.seconds, 2 * 0.01 + 6000.0 / 1e6 + 200000.0 / 1e9 + 20000.0 / 2e5);
  gemm_problem g{512, 256, 384};
  g.element_bytes = 2;
  g.result_element_bytes = 4;
  planner_config cfg;
  cfg.ps_flops = 1e6;
  plan p = make_plan(g, fleet(8, prof(1e12, 1e9, 1e8, 1e8, 0)), cfg);
  ASSERT_FALSE(p.local);
  uint64_t down = 0, up = 0;
  for (const auto& a : p.tiles) {
    down += tile_down_bytes(p, a);
    up += tile_up_bytes(p, a.t);
    EXPECT_EQ(tile_up_bytes(p, a.t), 4u * static_cast<uint64_t>((a.t.m1 - a.t.m0) * (a.t.n1 - a.t.n0)));
  }
  EXPECT_EQ(p.bytes_down, down);
  EXPECT_EQ(p.bytes_up, up);
}

TEST(PlannerCost, SplitEdgesAreAlignedAndBalanced) {
  auto e = split_edges(1000, 3, 16);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e.front(), 0);
  EXPECT_EQ(e.back(), 1000);
  for (size_t i = 1; i + 1 < e.size(); ++i) EXPECT_EQ(e[i] % 16, 0);
  for (size_t i = 0; i + 1 < e.size(); ++i) {
    EXPECT_GT(e[i + 1] - e[i], 0);
    EXPECT_LE(e[i + 1] - e[i], 16 * ((63 + 2) / 3));
  }
  // More parts than aligned units: falls back to an even split.
  auto f = split_edges(20, 5, 16);
  EXPECT_EQ(f, (std::vector<int64_t>{0, 4, 8, 12, 16, 20}));
  EXPECT_EQ(split_edges(7, 1, 16), (std::vector<int64_t>{0, 7}));
}

TEST(Planner, CoverageIsExactAndDisjointForRandomShapesAndFleets) {
  std::mt19937_64 rng(20240607);
  auto uni = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto logu = [&](double lo, double hi) { return std::exp(uni(std::log(lo), std::log(hi))); };
  int distributed = 0, ksplit = 0;
  for (int iter = 0; iter < 300; ++iter) {
    gemm_problem g;
    g.m = static_cast<int64_t>(logu(1, 5000));
    g.n = static_cast<int64_t>(logu(1, 3000));
    g.role = static_cast<gemm_role>(rng() % 3);
    g.k = static_cast<int64_t>(logu(1, g.role == gemm_role::grad_weight ? 200000 : 20000));
    int n = 1 + static_cast<int>(rng() % 40);
    std::vector<device_view> devs;
    for (int i = 0; i < n; ++i)
      devs.push_back(device_view{
          static_cast<int32_t>(1000 - 7 * i),
          prof(logu(1e8, 1e11), logu(1e4, 1e9), logu(1e5, 1e9), logu(1e5, 1e9), uni(0, 0.01)),
          uni(0, 1) < 0.3 ? uni(0, 0.5) : 0.0});
    planner_config cfg;
    cfg.ps_flops = logu(1e6, 1e9);
    cfg.ps_egress = logu(1e6, 1e10);
    cfg.ps_ingress = logu(1e6, 1e10);
    cfg.min_split_flops = 1000;
    cfg.max_tiles_per_device = 1 + static_cast<int>(rng() % 5);
    cfg.tile_align = std::vector<int64_t>{1, 8, 16, 64}[rng() % 4];
    SCOPED_TRACE(::testing::Message() << "iter " << iter << " shape " << g.m << "x" << g.n << "x"
                                    << g.k << " role " << int(g.role) << " devices " << n);
    plan p = make_plan(g, devs, cfg);
    EXPECT_FALSE(p.reason.empty());
    if (p.local) {
      EXPECT_TRUE(p.tiles.empty());
      continue;
    }
    ++distributed;
    if (p.grid_k > 1) ++ksplit;
    check_plan(p, g, devs, cfg);
    if (HasFatalFailure()) return;
  }
  std::printf("[ coverage ] %d of 300 plans distributed, %d with K split\n", distributed, ksplit);
  // The property must have been exercised on real splits.
  EXPECT_GT(distributed, 100);
  EXPECT_GT(ksplit, 5);
}

TEST(Planner, SplitsKOnlyForGradWeight) {
  // Few outputs, many tokens: the weight gradient's shape.
  gemm_problem g{512, 512, 65536, gemm_role::grad_weight};
  auto devs = fleet(32, preset_like[3]);
  planner_config cfg;
  plan p = make_plan(g, devs, cfg);
  ASSERT_FALSE(p.local) << p.reason;
  EXPECT_GT(p.grid_k, 1) << p.reason;
  check_plan(p, g, devs, cfg);
  for (auto role : {gemm_role::forward, gemm_role::grad_input, gemm_role::attn_scores}) {
    g.role = role;
    plan q = make_plan(g, devs, cfg);
    EXPECT_EQ(q.grid_k, 1) << q.reason;
    for (const auto& a : q.tiles) EXPECT_TRUE(a.t.k0 == 0 && a.t.k1 == g.k);
  }
}

TEST(Planner, SmallGemmStaysLocalWithAReason) {
  auto devs = mixed_fleet(16);
  planner_config cfg;
  plan p = make_plan(gemm_problem{64, 64, 64}, devs, cfg);
  EXPECT_TRUE(p.local);
  EXPECT_TRUE(p.tiles.empty());
  EXPECT_NE(p.reason.find("below"), std::string::npos) << p.reason;
  EXPECT_DOUBLE_EQ(p.local_seconds, 2.0 * 64 * 64 * 64 / cfg.ps_flops);
  // Raising the same GEMM above the threshold lets it split on a fast fleet.
  cfg.min_split_flops = 1;
  cfg.ps_flops = 1e6;
  auto fast = fleet(16, prof(1e12, 1e9, 1e10, 1e10, 0));
  EXPECT_FALSE(make_plan(gemm_problem{64, 64, 64}, fast, cfg).local);
}

TEST(Planner, TransferCostAboveTheSavingStaysLocal) {
  gemm_problem g{2048, 2048, 2048};
  planner_config cfg;  // PS at 5e10 FLOP/s: 0.34 s locally
  auto slow_links = fleet(16, prof(1e12, 8e9, 1e5, 1e5, 0.01));
  plan p = make_plan(g, slow_links, cfg);
  EXPECT_TRUE(p.local);
  EXPECT_NE(p.reason.find("not faster than local"), std::string::npos) << p.reason;
  // The same devices on fast links are worth using.
  auto fast_links = fleet(16, prof(1e12, 8e9, 1e9, 1e9, 0.001));
  plan q = make_plan(g, fast_links, cfg);
  EXPECT_FALSE(q.local) << q.reason;
  EXPECT_LT(q.predicted_seconds, q.local_seconds);
}

TEST(Planner, MemoryLimitsWhoGetsTiles) {
  gemm_problem g{4096, 4096, 4096};
  auto cfg = compute_bound_cfg();
  auto devs = fleet(8, prof(1e10, 8e9, 1e9, 1e9, 0.001));
  devs[3].profile.memory_bytes = 1000;  // cannot hold any 16x16x16 tile either
  devs[5].profile.memory_bytes = 1000;
  plan p = make_plan(g, devs, cfg);
  ASSERT_FALSE(p.local) << p.reason;
  check_plan(p, g, devs, cfg);
  for (const auto& a : p.tiles) EXPECT_TRUE(a.device != 3 && a.device != 5);
  EXPECT_EQ(p.devices_used, 6);

  // Memory that forces small tiles: every tile fits the device.
  const uint64_t roomy_ws = tile_working_set(p.tiles.front().t);
  auto small = fleet(8, prof(1e10, 3e7, 1e9, 1e9, 0.001));
  plan s = make_plan(g, small, cfg);
  ASSERT_FALSE(s.local) << s.reason;
  check_plan(s, g, small, cfg);
  EXPECT_LT(tile_working_set(s.tiles.front().t), roomy_ws);
  EXPECT_LE(tile_working_set(s.tiles.front().t), 30000000u);

  for (auto& d : devs) d.profile.memory_bytes = 1000;
  plan none = make_plan(g, devs, cfg);
  EXPECT_TRUE(none.local);
  EXPECT_NE(none.reason.find("no device can hold"), std::string::npos) << none.reason;
}

TEST(Planner, HeterogeneousDevicesGetWorkInProportionToSpeed) {
  gemm_problem g{4096, 4096, 4096};
  auto cfg = compute_bound_cfg();
  std::vector<device_view> mixed;
  for (int i = 0; i < 8; ++i)
    mixed.push_back(device_view{i, prof(i % 2 ? 2.5e9 : 1e10, 8e9, 1e12, 1e12, 0), 0});
  plan p = make_plan(g, mixed, cfg);
  ASSERT_FALSE(p.local) << p.reason;
  check_plan(p, g, mixed, cfg);
  double fast = 0, slow = 0;
  for (auto [id, f] : flops_per_device(p)) (id % 2 ? slow : fast) += f;
  ASSERT_GT(slow, 0) << p.reason;
  EXPECT_NEAR(fast / slow, 4.0, 1.0) << p.reason;
  std::printf("[ hetero   ] fast/slow FLOPs %.3f; %s\n", fast / slow, p.reason.c_str());
  // Better than a fleet of only slow devices, and than the ideal split for it.
  auto all_slow = fleet(8, prof(2.5e9, 8e9, 1e12, 1e12, 0));
  plan q = make_plan(g, all_slow, cfg);
  ASSERT_FALSE(q.local);
  EXPECT_LT(p.predicted_seconds, q.predicted_seconds);
  // Within 25% of the perfectly divisible optimum for the mixed fleet.
  EXPECT_LT(p.predicted_seconds, 1.25 * g.flops() / (4 * 1e10 + 4 * 2.5e9));
}

TEST(Planner, BusyDevicesGetLessWork) {
  gemm_problem g{2048, 2048, 2048};
  auto cfg = compute_bound_cfg();
  auto devs = fleet(4, prof(1e10, 8e9, 1e12, 1e12, 0));
  devs[2].ready_at = 1000;  // far longer than the whole GEMM
  plan p = make_plan(g, devs, cfg);
  ASSERT_FALSE(p.local);
  check_plan(p, g, devs, cfg);
  for (const auto& a : p.tiles) EXPECT_NE(a.device, 2);
}

TEST(Planner, PerDeviceTrafficFallsAsDevicesJoin) {
  // An OPT-like FFN product with the prototype's default links.
  gemm_problem g{16384, 4096, 4096};
  planner_config cfg;
  cfg.ps_egress = cfg.ps_ingress = 1e11;  // many PS shards: the devices' links bind
  auto p_edge = prof(3e12, 8e9, 1e8, 5e6, 0.005);
  double last = std::numeric_limits<double>::infinity();
  double last_time = std::numeric_limits<double>::infinity();
  for (int n : {8, 16, 32, 64, 128}) {
    auto devs = fleet(n, p_edge);
    plan p = make_plan(g, devs, cfg);
    ASSERT_FALSE(p.local) << p.reason;
    check_plan(p, g, devs, cfg);
    double mean = double(p.bytes_down) / p.devices_used;
    uint64_t peak = 0;
    for (auto [id, b] : bytes_down_per_device(p)) peak = std::max(peak, b);
    SCOPED_TRACE(::testing::Message() << n << " devices: " << p.reason);
    std::printf("[ traffic  ] %3d devices: %.3g bytes down per device used; %s\n", n, mean,
                p.reason.c_str());
    EXPECT_LT(mean, last);
    EXPECT_LE(double(peak), 1.5 * mean);
    EXPECT_LE(p.predicted_seconds, last_time);
    last = mean;
    last_time = p.predicted_seconds;
  }
}

TEST(Planner, PsEgressBoundsThePrediction) {
  gemm_problem g{4096, 4096, 4096};
  planner_config cfg = compute_bound_cfg();
  auto devs = fleet(16, prof(1e12, 8e9, 1e12, 1e12, 0));
  plan free_ = make_plan(g, devs, cfg);
  ASSERT_FALSE(free_.local);
  cfg.ps_egress = 1e8;  // 100 MB/s shared by all
  cfg.ps_flops = 1e9;
  plan p = make_plan(g, devs, cfg);
  ASSERT_FALSE(p.local) << p.reason;
  check_plan(p, g, devs, cfg);
  double max_finish = 0;
  for (const auto& a : p.tiles) max_finish = std::max(max_finish, a.predicted_finish);
  EXPECT_DOUBLE_EQ(p.predicted_seconds, double(p.bytes_down) / cfg.ps_egress);
  EXPECT_GT(p.predicted_seconds, max_finish);
  // At least A and B once each must leave the PS.
  EXPECT_GE(p.bytes_down, 4u * (4096 * 4096 * 2));
  EXPECT_GT(p.predicted_seconds, 10 * free_.predicted_seconds);
  // The egress-bound plan sends less than the unconstrained one.
  EXPECT_LE(p.bytes_down, free_.bytes_down);
}

TEST(Planner, MirrorPlansKeepPlacementAndMarkCachedOperands) {
  const int64_t tokens = 8192, d_in = 2048, d_out = 4096;
  gemm_problem fwd{tokens, d_out, d_in, gemm_role::forward};
  planner_config cfg;
  auto devs = mixed_fleet(12);
  plan f = make_plan(fwd, devs, cfg);
  ASSERT_FALSE(f.local) << f.reason;
  check_plan(f, fwd, devs, cfg);

  gemm_problem gi_shape{tokens, d_in, d_out, gemm_role::grad_input};
  auto gi = mirror_plan(f, gemm_role::grad_input, gi_shape, devs, cfg);
  ASSERT_TRUE(gi.has_value());
  ASSERT_EQ(gi->tiles.size(), f.tiles.size());
  EXPECT_EQ(gi->grid_k, f.grid_n);
  double volume = 0;
  for (size_t i = 0; i < f.tiles.size(); ++i) {
    const auto &a = f.tiles[i], &b = gi->tiles[i];
    EXPECT_EQ(b.device, a.device);
    EXPECT_EQ(b.t, (tile{a.t.m0, a.t.m1, 0, d_in, a.t.n0, a.t.n1}));
    EXPECT_FALSE(b.a_cached);
    EXPECT_TRUE(b.b_cached);
    volume += double(b.t.flops()) / 2;
  }
  EXPECT_DOUBLE_EQ(volume, double(tokens) * d_in * d_out);
  EXPECT_FALSE(gi->local);
  EXPECT_GT(gi->predicted_seconds, 0);

  gemm_problem gw_shape{d_in, d_out, tokens, gemm_role::grad_weight};
  auto gw_alone = mirror_plan(f, gemm_role::grad_weight, gw_shape, devs, cfg);
  auto gw = mirror_plan(f, gemm_role::grad_weight, gw_shape, devs, cfg, &*gi);
  ASSERT_TRUE(gw_alone && gw);
  EXPECT_EQ(gw->grid_k, f.grid_m);
  for (size_t i = 0; i < f.tiles.size(); ++i) {
    const auto &a = f.tiles[i], &b = gw->tiles[i];
    EXPECT_EQ(b.device, a.device);
    EXPECT_EQ(b.t, (tile{0, d_in, a.t.n0, a.t.n1, a.t.m0, a.t.m1}));
    EXPECT_TRUE(b.a_cached);
    EXPECT_TRUE(b.b_cached);  // dY block came with grad_input
    EXPECT_TRUE(gw_alone->tiles[i].a_cached);
    EXPECT_FALSE(gw_alone->tiles[i].b_cached);
  }
  EXPECT_EQ(gw->bytes_down, 0u);
  EXPECT_GT(gw_alone->bytes_down, 0u);
  EXPECT_LT(gw->predicted_seconds, gw_alone->predicted_seconds);
  // Cheaper than planning the backward product from scratch, which sends both operands.
  plan fresh = make_plan(gi_shape, devs, cfg);
  if (!fresh.local) {
    EXPECT_LE(gi->bytes_down, fresh.bytes_down);
  }

  // A placed device gone: no mirror.
  auto fewer = devs;
  fewer.erase(std::find_if(fewer.begin(), fewer.end(),
                           [&](const device_view& d) { return d.id == f.tiles.front().device; }));
  EXPECT_FALSE(mirror_plan(f, gemm_role::grad_input, gi_shape, fewer, cfg).has_value());
  // Wrong shapes, wrong role, local forward: no mirror.
  EXPECT_FALSE(mirror_plan(f, gemm_role::grad_input, gw_shape, devs, cfg).has_value());
  EXPECT_FALSE(mirror_plan(f, gemm_role::forward, gi_shape, devs, cfg).has_value());
  plan local = make_plan(gemm_problem{8, 8, 8}, devs, cfg);
  EXPECT_FALSE(mirror_plan(local, gemm_role::grad_input, gemm_problem{8, 8, 8}, devs, cfg));
}

TEST(Planner, Deterministic) {
  gemm_problem g{8192, 4096, 4096, gemm_role::grad_weight};
  planner_config cfg;
  auto devs = mixed_fleet(24);
  devs[5].ready_at = 0.3;
  plan a = make_plan(g, devs, cfg);
  plan b = make_plan(g, devs, cfg);
  EXPECT_TRUE(same_plan(a, b));
  std::mt19937 rng(7);
  for (int i = 0; i < 5; ++i) {
    auto shuffled = devs;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_TRUE(same_plan(a, make_plan(g, shuffled, cfg)));
  }
  // Identical devices: ties go to the lower id, so device 0 takes the first tile.
  auto same = fleet(8, preset_like[1], 10);
  plan c = make_plan(gemm_problem{4096, 4096, 4096}, same, cfg);
  ASSERT_FALSE(c.local);
  EXPECT_EQ(c.tiles.front().device, 10);
}

TEST(Planner, PredictSequenceAddsPlans) {
  auto devs = mixed_fleet(8);
  planner_config cfg;
  std::vector<gemm_problem> gs{
      {64, 64, 64}, {4096, 4096, 4096}, {512, 512, 65536, gemm_role::grad_weight}};
  double sum = 0;
  for (const auto& g : gs) sum += plan_seconds(make_plan(g, devs, cfg));
  EXPECT_DOUBLE_EQ(predict_sequence(gs, devs, cfg), sum);
  EXPECT_GT(sum, 0);
}

TEST(Planner, BudgetedSearchIsCloseToExhaustive) {
  std::mt19937_64 rng(4242);
  auto uni = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto logu = [&](double lo, double hi) { return std::exp(uni(std::log(lo), std::log(hi))); };
  double sum = 0, worst = 1;
  int n_cmp = 0;
  for (int iter = 0; iter < 60; ++iter) {
    gemm_problem g{static_cast<int64_t>(logu(256, 65536)), static_cast<int64_t>(logu(256, 16384)),
                   static_cast<int64_t>(logu(256, 65536)), static_cast<gemm_role>(rng() % 3)};
    std::vector<device_view> devs;
    int n = static_cast<int>(logu(2, 48));
    for (int i = 0; i < n; ++i) {
      auto p = preset_like[rng() % 4];
      p.flops *= logu(0.25, 4);
      p.downlink *= logu(0.25, 4);
      p.uplink *= logu(0.25, 4);
      devs.push_back(device_view{i, p, 0});
    }
    planner_config cfg;
    cfg.ps_egress = logu(1e8, 1e11);
    cfg.ps_ingress = logu(1e8, 1e11);
    plan fast = make_plan(g, devs, cfg);
    cfg.search_budget = 0;
    plan exact = make_plan(g, devs, cfg);
    if (fast.local || exact.local) {
      EXPECT_EQ(fast.local, exact.local) << fast.reason << " | " << exact.reason;
      continue;
    }
    double r = fast.predicted_seconds / exact.predicted_seconds;
    EXPECT_GE(r, 1.0 - 1e-12);  // exhaustive is the best the search can find
    sum += r;
    worst = std::max(worst, r);
    ++n_cmp;
  }
  ASSERT_GT(n_cmp, 30);
  EXPECT_LT(sum / n_cmp, 1.02);
  EXPECT_LT(worst, 1.2);
  std::printf("[ search   ] budgeted / exhaustive over %d GEMMs: mean %.4f, worst %.4f\n", n_cmp,
              sum / n_cmp, worst);
}

namespace {
double thread_cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
}  // namespace

// Targets: 5 ms for 64 devices, 50 ms for 1024. Asserted loosely on CPU time
// (wall time on a shared machine is noise).
TEST(Planner, FastEnoughForLargeFleets) {
  planner_config cfg;
  std::vector<gemm_problem> shapes{{65536, 4096, 4096, gemm_role::forward},
                                   {65536, 16384, 4096, gemm_role::forward},
                                   {4096, 4096, 65536, gemm_role::grad_weight},
                                   {8192, 1024, 1024, gemm_role::forward}};
  for (int n : {64, 1024}) {
    std::vector<device_view> devs;
    std::mt19937_64 rng(n);
    for (int i = 0; i < n; ++i) {
      // Measured profiles: every device slightly different.
      auto p = preset_like[i % 4];
      p.flops *= 0.8 + 0.4 * double(rng() % 1000) / 1000;
      p.downlink *= 0.8 + 0.4 * double(rng() % 1000) / 1000;
      devs.push_back(device_view{i, p, 0});
    }
    double worst = 0;
    for (const auto& g : shapes) {
      auto t0 = std::chrono::steady_clock::now();
      double c0 = thread_cpu_ms();
      plan p = make_plan(g, devs, cfg);
      double cpu = thread_cpu_ms() - c0;
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      worst = std::max(worst, cpu);
      std::printf(
          "[ plan     ] %4d devices, %lldx%lldx%lld role %d: %.2f ms (cpu %.2f), %d of %d "
          "grids simulated; %s\n",
          n, (long long)g.m, (long long)g.n, (long long)g.k, int(g.role), ms, cpu,
          p.grids_evaluated, p.grids_considered, p.reason.c_str());
      ASSERT_FALSE(p.local);
      check_plan(p, g, devs, cfg);
    }
    EXPECT_LT(worst, n <= 64 ? 25.0 : 200.0) << n << " devices";
  }
}
