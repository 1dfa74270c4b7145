// The planner's pure core: tile cost model, grid search, assignment, mirrors.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <random>
#include <set>

#include "actors/planner/grid_search.hpp"
#include "actors/planner/placement.hpp"
#include "actors/planner/speed_order.hpp"

using namespace cleave;

namespace {

device_profile prof(double flops, double memory, double down, double up, double latency,
                    std::string name = "dev") {
  return device_profile{std::move(name), flops, static_cast<uint64_t>(memory), down, up, latency};
}

// The shipped presets' figures (schema/profile.cpp), copied so this test needs
// no JSON: phone, edge, laptop, vm.
const device_profile preset_like[] = {
    prof(2e10, 2e9, 5e7, 1e7, 0.02, "phone"),
    prof(5e10, 4e9, 1e8, 2e7, 0.005, "edge"),
    prof(1.5e11, 8e9, 1e8, 5e7, 0.002, "laptop"),
    prof(6e10, 4e9, 1.25e8, 1.25e8, 0.001, "vm"),
};

std::vector<device_view> fleet(int n, const device_profile& p, int32_t first_id = 0) {
  std::vector<device_view> out;
  for (int i = 0; i < n; ++i) out.push_back(device_view{first_id + i, p, 0});
  return out;
}

std::vector<device_view> mixed_fleet(int n) {
  std::vector<device_view> out;
  for (int i = 0; i < n; ++i) out.push_back(device_view{i, preset_like[i % 4], 0});
  return out;
}

// A fleet where only compute matters: links and PS far faster than devices.
planner_config compute_bound_cfg() {
  planner_config cfg;
  cfg.ps_flops = 1e8;
  cfg.ps_egress = 1e15;
  cfg.ps_ingress = 1e15;
  return cfg;
}

bool overlap(const tile& a, const tile& b) {
  return a.m0 < b.m1 && b.m0 < a.m1 && a.n0 < b.n1 && b.n0 < a.n1 && a.k0 < b.k1 && b.k0 < a.k1;
}

std::map<int32_t, double> flops_per_device(const plan& p) {
  std::map<int32_t, double> out;
  for (const auto& a : p.tiles) out[a.device] += static_cast<double>(a.t.flops());
  return out;
}

// Everything a distributed plan from make_plan must satisfy.
void check_plan(const plan& p, const gemm_problem& g, const std::vector<device_view>& devs,
                const planner_config& cfg) {
  SCOPED_TRACE(p.reason);
  ASSERT_FALSE(p.local);
  ASSERT_FALSE(p.tiles.empty());
  EXPECT_EQ(static_cast<int64_t>(p.tiles.size()), p.grid_m * p.grid_n * p.grid_k);
  EXPECT_LE(static_cast<int64_t>(p.tiles.size()),
            static_cast<int64_t>(devs.size()) * cfg.max_tiles_per_device);
  if (g.role != gemm_role::grad_weight) {
    EXPECT_EQ(p.grid_k, 1);
  }
  // Exact, disjoint cover: inside the box, pairwise disjoint, volumes add up.
  double volume = 0;
  for (size_t x = 0; x < p.tiles.size(); ++x) {
    const tile& t = p.tiles[x].t;
    ASSERT_TRUE(0 <= t.m0 && t.m0 < t.m1 && t.m1 <= g.m);
    ASSERT_TRUE(0 <= t.n0 && t.n0 < t.n1 && t.n1 <= g.n);
    ASSERT_TRUE(0 <= t.k0 && t.k0 < t.k1 && t.k1 <= g.k);
    volume += double(t.m1 - t.m0) * double(t.n1 - t.n0) * double(t.k1 - t.k0);
    for (size_t y = x + 1; y < p.tiles.size(); ++y)
      ASSERT_FALSE(overlap(t, p.tiles[y].t)) << "tiles " << x << " and " << y;
    // Aligned inner edges, where the dimension allows that many aligned parts.
    auto aligned = [&](int64_t e, int64_t size, int64_t parts) {
      if (e == 0 || e == size) return true;
      if (parts > (size + cfg.tile_align - 1) / cfg.tile_align) return true;
      return e % cfg.tile_align == 0;
    };
    EXPECT_TRUE(aligned(t.m0, g.m, p.grid_m) && aligned(t.m1, g.m, p.grid_m));
    EXPECT_TRUE(aligned(t.n0, g.n, p.grid_n) && aligned(t.n1, g.n, p.grid_n));
    EXPECT_TRUE(aligned(t.k0, g.k, p.grid_k) && aligned(t.k1, g.k, p.grid_k));
  }
  EXPECT_DOUBLE_EQ(volume, double(g.m) * double(g.n) * double(g.k));
  // Largest tile first.
  for (size_t x = 1; x < p.tiles.size(); ++x)
    EXPECT_GE(p.tiles[x - 1].t.flops(), p.tiles[x].t.flops());
  // Replay: memory, caching, finish times, bytes, the predicted time.
  std::map<int32_t, const device_view*> by_id;
  for (const auto& d : devs) by_id[d.id] = &d;
  std::map<int32_t, double> avail;
  std::map<int32_t, tile> prev;
  uint64_t down = 0, up = 0;
  double max_finish = 0;
  for (const auto& a : p.tiles) {
    ASSERT_TRUE(by_id.count(a.device)) << a.device;
    const device_view& d = *by_id[a.device];
    EXPECT_GE(d.profile.memory_bytes, tile_working_set(a.t));
    auto pv = prev.find(a.device);
    bool same_a = pv != prev.end() && pv->second.m0 == a.t.m0 && pv->second.m1 == a.t.m1 &&
                  pv->second.k0 == a.t.k0 && pv->second.k1 == a.t.k1;
    bool same_b = pv != prev.end() && pv->second.n0 == a.t.n0 && pv->second.n1 == a.t.n1 &&
                  pv->second.k0 == a.t.k0 && pv->second.k1 == a.t.k1;
    EXPECT_EQ(a.a_cached, same_a);
    EXPECT_EQ(a.b_cached, same_b);
    prev[a.device] = a.t;
    auto c = predict_tile(a.t, gemm_element_bytes, d.profile, a.a_cached, a.b_cached);
    auto it = avail.emplace(a.device, d.ready_at).first;
    it->second += c.seconds;
    EXPECT_NEAR(a.predicted_finish, it->second, 1e-12 * it->second);
    max_finish = std::max(max_finish, it->second);
    down += c.bytes_down;
    up += c.bytes_up;
  }
  EXPECT_EQ(p.bytes_down, down);
  EXPECT_EQ(p.bytes_up, up);
  // The assignment rule, by brute force: each tile to the device with the
  // lowest max(finish, PS egress so far), then earliest finish, then lowest id,
  // among those that hold the grid's largest tile; then the swaps that give a
  // dominating device at least the FLOPs of the one it dominates.
  uint64_t ws_max = 0;
  for (const auto& a : p.tiles) ws_max = std::max(ws_max, tile_working_set(a.t));
  std::map<int32_t, double> at;
  std::map<int32_t, tile> last;
  uint64_t sent = 0;
  plan greedy = p;
  for (size_t x = 0; x < p.tiles.size(); ++x) {
    const tile& t = p.tiles[x].t;
    int32_t pick = -1;
    double pick_obj = 0, pick_finish = 0;
    uint64_t pick_bytes = 0;
    for (const auto& d : devs) {
      if (!usable(d.profile) || d.profile.memory_bytes < ws_max) continue;
      auto l = last.find(d.id);
      bool ca = l != last.end() && l->second.m0 == t.m0 && l->second.m1 == t.m1 &&
                l->second.k0 == t.k0 && l->second.k1 == t.k1;
      bool cb = l != last.end() && l->second.n0 == t.n0 && l->second.n1 == t.n1 &&
                l->second.k0 == t.k0 && l->second.k1 == t.k1;
      auto c = predict_tile(t, gemm_element_bytes, d.profile, ca, cb);
      double start = at.count(d.id) ? at[d.id] : d.ready_at;
      double finish = start + c.seconds;
      double obj = std::max(finish, double(sent + c.bytes_down) / cfg.ps_egress);
      if (pick < 0 || obj < pick_obj || (obj == pick_obj && finish < pick_finish) ||
          (obj == pick_obj && finish == pick_finish && d.id < pick)) {
        pick = d.id;
        pick_obj = obj;
        pick_finish = finish;
        pick_bytes = c.bytes_down;
      }
    }
    greedy.tiles[x].device = pick;
    at[pick] = pick_finish;
    last[pick] = t;
    sent += pick_bytes;
  }
  double greedy_finish = 0;
  for (const auto& [id, t] : at) greedy_finish = std::max(greedy_finish, t);
  greedy.predicted_seconds =
      std::max({greedy_finish, double(sent) / cfg.ps_egress, double(p.bytes_up) / cfg.ps_ingress});
  give_faster_devices_more(greedy, devs, cfg);
  for (size_t x = 0; x < p.tiles.size(); ++x)
    ASSERT_EQ(p.tiles[x].device, greedy.tiles[x].device) << "tile " << x;
  EXPECT_EQ(p.devices_used, static_cast<int32_t>(avail.size()));
  double expect = std::max({max_finish, double(down) / cfg.ps_egress, double(up) / cfg.ps_ingress});
  EXPECT_DOUBLE_EQ(p.predicted_seconds, expect);
  EXPECT_LT(p.predicted_seconds, p.local_seconds);
  EXPECT_DOUBLE_EQ(p.local_seconds, g.flops() / cfg.ps_flops);
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
  auto c = predict_tile(t, gemm_element_bytes, p, false, false);
  EXPECT_EQ(c.bytes_down, 4u * (100 * 20 + 20 * 50));
  EXPECT_EQ(c.bytes_up, 4u * 100 * 50);
  EXPECT_DOUBLE_EQ(c.seconds, 2 * 0.01 + 12000.0 / 1e6 + 200000.0 / 1e9 + 20000.0 / 2e5);
  auto ca = predict_tile(t, gemm_element_bytes, p, true, false);
  EXPECT_EQ(ca.bytes_down, 4u * 20 * 50);
  auto cb = predict_tile(t, gemm_element_bytes, p, false, true);
  EXPECT_EQ(cb.bytes_down, 4u * 100 * 20);
  auto both = predict_tile(t, gemm_element_bytes, p, true, true);
  EXPECT_EQ(both.bytes_down, 0u);
  EXPECT_DOUBLE_EQ(both.seconds, 2 * 0.01 + 200000.0 / 1e9 + 20000.0 / 2e5);
  EXPECT_EQ(tile_working_set(t), 4u * (100 * 20 + 20 * 50 + 100 * 50));
  EXPECT_TRUE(std::isinf(predict_tile(t, gemm_element_bytes, prof(0, 1e9, 1e6, 1e6, 0), false, false).seconds));
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
    SCOPED_TRACE(testing::Message() << "iter " << iter << " shape " << g.m << "x" << g.n << "x"
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
    SCOPED_TRACE(testing::Message() << n << " devices: " << p.reason);
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
