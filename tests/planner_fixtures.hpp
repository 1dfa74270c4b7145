#pragma once
// What the planner's tests share: device profiles and fleets, a PS far faster
// than its devices, and the invariants every distributed plan keeps.

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "actors/planner/grid_search.hpp"
#include "actors/planner/speed_order.hpp"

namespace cleave::testing {

inline device_profile prof(double flops, double memory, double down, double up, double latency,
                           std::string name = "dev") {
  return device_profile{std::move(name), flops, static_cast<uint64_t>(memory), down, up, latency};
}

// The shipped presets' figures (schema/profile.cpp), copied so these tests
// need no JSON: phone, edge, laptop, vm.
inline const device_profile preset_like[] = {
    prof(2e10, 2e9, 5e7, 1e7, 0.02, "phone"),
    prof(5e10, 4e9, 1e8, 2e7, 0.005, "edge"),
    prof(1.5e11, 8e9, 1e8, 5e7, 0.002, "laptop"),
    prof(6e10, 4e9, 1.25e8, 1.25e8, 0.001, "vm"),
};

inline std::vector<device_view> fleet(int n, const device_profile& p, int32_t first_id = 0) {
  std::vector<device_view> out;
  for (int i = 0; i < n; ++i) out.push_back(device_view{first_id + i, p, 0});
  return out;
}

inline std::vector<device_view> mixed_fleet(int n) {
  std::vector<device_view> out;
  for (int i = 0; i < n; ++i) out.push_back(device_view{i, preset_like[i % 4], 0});
  return out;
}

// A fleet where only compute matters: links and PS far faster than devices.
inline planner_config compute_bound_cfg() {
  planner_config cfg;
  cfg.ps_flops = 1e8;
  cfg.ps_egress = 1e15;
  cfg.ps_ingress = 1e15;
  return cfg;
}

inline bool overlap(const tile& a, const tile& b) {
  return a.m0 < b.m1 && b.m0 < a.m1 && a.n0 < b.n1 && b.n0 < a.n1 && a.k0 < b.k1 && b.k0 < a.k1;
}

// Everything a distributed plan from make_plan must satisfy.
inline void check_plan(const plan& p, const gemm_problem& g, const std::vector<device_view>& devs,
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
    auto c = predict_tile(a.t, gemm_element_bytes, gemm_element_bytes, d.profile, a.a_cached, a.b_cached);
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
      auto c = predict_tile(t, gemm_element_bytes, gemm_element_bytes, d.profile, ca, cb);
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

}  // namespace cleave::testing
