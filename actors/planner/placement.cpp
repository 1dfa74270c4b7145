#include "actors/planner/placement.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "actors/planner/grid_search.hpp"

namespace cleave {

std::optional<plan> mirror_plan(const plan& forward, gemm_role role, const gemm_problem& backward,
                                const std::vector<device_view>& fleet,
                                const planner_config& fleet_cfg, const plan* grad_input) {
  const auto [alive, cfg] = fair_share(fleet, fleet_cfg, backward.sharers);
  if (forward.local || forward.tiles.empty()) return std::nullopt;
  if (role != gemm_role::grad_input && role != gemm_role::grad_weight) return std::nullopt;
  // The forward shape, from its tiles; K must not be split.
  int64_t fm = 0, fn = 0, fk = forward.tiles.front().t.k1;
  for (const auto& a : forward.tiles) {
    if (a.t.k0 != 0 || a.t.k1 != fk) return std::nullopt;
    fm = std::max(fm, a.t.m1);
    fn = std::max(fn, a.t.n1);
  }
  if (role == gemm_role::grad_input && (backward.m != fm || backward.n != fk || backward.k != fn))
    return std::nullopt;
  if (role == gemm_role::grad_weight && (backward.m != fk || backward.n != fn || backward.k != fm))
    return std::nullopt;

  std::map<int32_t, const device_view*> by_id;
  for (const auto& v : alive) by_id.emplace(v.id, &v);
  // dY blocks already sent by the grad_input plan: (m-range, n-range) -> device.
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int32_t>> dy_at;
  if (role == gemm_role::grad_weight && grad_input && !grad_input->local)
    for (const auto& a : grad_input->tiles) dy_at.emplace(a.t.m0, a.t.m1, a.t.k0, a.t.k1, a.device);

  plan p;
  p.local = false;
  p.problem = backward;
  p.problem.role = role;
  p.local_seconds = backward.flops() / cfg.ps_flops;
  std::map<int32_t, device_stages> avail;
  double max_finish = 0;
  for (const auto& f : forward.tiles) {
    auto it = by_id.find(f.device);
    if (it == by_id.end() || !usable(it->second->profile)) return std::nullopt;
    const device_view& v = *it->second;
    assignment a;
    a.device = f.device;
    if (role == gemm_role::grad_input) {
      a.t = tile{f.t.m0, f.t.m1, 0, fk, f.t.n0, f.t.n1};
      a.a_cached = false;  // dY block
      a.b_cached = true;   // W block, sent for the forward tile
    } else {
      a.t = tile{0, fk, f.t.n0, f.t.n1, f.t.m0, f.t.m1};
      a.a_cached = true;  // X block, sent for the forward tile
      a.b_cached = dy_at.count({f.t.m0, f.t.m1, f.t.n0, f.t.n1, f.device}) > 0;
    }
    if (v.profile.memory_bytes < tile_working_set(a.t)) return std::nullopt;
    auto cost = predict_tile(a.t, p.problem.element_bytes, p.problem.result_element_bytes, v.profile, a.a_cached, a.b_cached);
    const double ready = std::max(0.0, v.ready_at);
    auto [slot, fresh] = avail.emplace(f.device, device_stages{ready, ready, ready});
    p.bytes_down += cost.bytes_down;
    p.bytes_up += cost.bytes_up;
    const auto& pr = v.profile;
    const tile_pass done = pass_tile(pr.latency, 1.0 / pr.downlink, 1.0 / pr.flops, 1.0 / pr.uplink,
                                     slot->second, cost.bytes_down, static_cast<double>(a.t.flops()),
                                     cost.bytes_up, static_cast<double>(p.bytes_down) / cfg.ps_egress,
                                     cfg.pipelined_devices);
    slot->second = done.after;
    a.predicted_finish = done.finish;
    max_finish = std::max(max_finish, a.predicted_finish);
    p.tiles.push_back(a);
  }
  if (role == gemm_role::grad_input) {
    p.grid_m = forward.grid_m;
    p.grid_n = 1;
    p.grid_k = forward.grid_n;
  } else {
    p.grid_m = 1;
    p.grid_n = forward.grid_n;
    p.grid_k = forward.grid_m;
  }
  p.devices_used = static_cast<int32_t>(avail.size());
  p.predicted_seconds =
      split_seconds(max_finish, p.bytes_down, p.bytes_up, p.tiles.size(), egress_tail(p, alive), cfg);
  p.bound = split_bound(p, alive, cfg);
  p.reason = std::string("mirror of forward ") + std::to_string(forward.grid_m) + "x" +
             std::to_string(forward.grid_n) + " placement (" +
             (role == gemm_role::grad_input ? "W" : "X") + " blocks cached): " +
             format_numbers("%.3g s vs local %.3g s", p.predicted_seconds, p.local_seconds);
  return p;
}

backward_choice backward_plan(const plan& forward, gemm_role role, const gemm_problem& backward,
                              const std::vector<device_view>& alive, const planner_config& cfg) {
  plan own = make_plan(backward, alive, cfg);
  auto mirror = mirror_plan(forward, role, backward, alive, cfg);
  if (mirror && plan_seconds(*mirror) <= plan_seconds(own)) return {std::move(*mirror), true};
  return {std::move(own), false};
}

namespace {

// The reason of a re-placed plan: what it was first made for, once.
std::string replaced_reason(const plan& p, size_t used) {
  const std::string marker = "; first planned as: ";
  const auto at = p.reason.find(marker);
  return "re-placed on " + std::to_string(used) + " devices" + marker
         + (at == std::string::npos ? p.reason : p.reason.substr(at + marker.size()));
}

// replace_plan for device processes: lost devices' tile lists move whole.
plan move_lost_lists(const plan& p, const std::vector<device_view>& devices, const planner_config& cfg) {
  std::map<int32_t, const device_view*> by_id;
  for (const auto& d : devices)
    if (usable(d.profile)) by_id[d.id] = &d;
  const std::vector<double> sent = plan_sent_at(p, cfg);
  std::map<int32_t, std::vector<size_t>> lists;  // by device, in plan order
  for (size_t i = 0; i < p.tiles.size(); ++i) lists[p.tiles[i].device].push_back(i);
  auto run = [&](const device_view& d, const std::vector<size_t>& tiles, std::vector<double>* each) {
    return device_finish(p, tiles, d, sent, true, each);
  };
  std::map<int32_t, std::vector<size_t>> kept;
  std::vector<std::vector<size_t>> lost;
  for (auto& [dev, tiles] : lists) {
    if (by_id.count(dev)) kept[dev] = std::move(tiles);
    else lost.push_back(std::move(tiles));
  }
  plan out = p;
  // Each device's finish with what it holds; a lost list is tried on the
  // few that finish first (trying every device costs the whole fleet per loss).
  constexpr size_t candidates = 8;
  std::map<int32_t, double> finish_now;
  for (const auto& [id, d] : by_id) finish_now[id] = run(*d, kept[id], nullptr);
  for (const auto& list : lost) {
    uint64_t memory = 0;
    for (size_t i : list) memory = std::max(memory, tile_memory(p, p.tiles[i].t));
    std::vector<std::pair<double, int32_t>> order;
    for (const auto& [id, d] : by_id)
      if (d->profile.memory_bytes >= memory) order.emplace_back(finish_now[id], id);
    const size_t tried = std::min(candidates, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(tried), order.end());
    order.resize(tried);
    const device_view* best = nullptr;
    double best_finish = std::numeric_limits<double>::infinity();
    for (const auto& [now, id] : order) {
      const device_view* d = by_id[id];
      std::vector<size_t> merged = kept[id];
      merged.insert(merged.end(), list.begin(), list.end());
      std::sort(merged.begin(), merged.end());
      const double f = run(*d, merged, nullptr);
      if (f < best_finish) {
        best_finish = f;
        best = d;
      }
    }
    for (size_t i : list) out.tiles[i].device = best ? best->id : -1;
    // The first tile of a moved list brings both blocks: its new device's
    // previous tile was another's.
    if (!list.empty()) out.tiles[list.front()].a_cached = out.tiles[list.front()].b_cached = false;
    if (best) {
      auto& merged = kept[best->id];
      merged.insert(merged.end(), list.begin(), list.end());
      std::sort(merged.begin(), merged.end());
      finish_now[best->id] = best_finish;
    }
  }
  out.bytes_down = out.bytes_up = 0;
  for (const auto& a : out.tiles) {
    out.bytes_down += tile_down_bytes(out, a);
    out.bytes_up += tile_up_bytes(out, a.t);
  }
  double max_finish = 0;
  size_t used = 0;
  for (const auto& [id, tiles] : kept) {
    if (tiles.empty()) continue;
    ++used;
    std::vector<double> each;
    max_finish = std::max(max_finish, run(*by_id[id], tiles, &each));
    for (size_t x = 0; x < tiles.size(); ++x) out.tiles[tiles[x]].predicted_finish = each[x];
  }
  out.devices_used = static_cast<int32_t>(used);
  out.predicted_seconds = split_seconds(max_finish, out.bytes_down, out.bytes_up, out.tiles.size(),
                                        egress_tail(out, devices), cfg);
  out.bound = split_bound(out, devices, cfg);
  out.reason = replaced_reason(p, used);
  return out;
}

}  // namespace

plan replace_plan(const plan& p, const std::vector<device_view>& fleet,
                  const planner_config& fleet_cfg) {
  if (p.local) return p;
  const auto [devices, cfg] = fair_share(fleet, fleet_cfg, p.problem.sharers);
  if (cfg.pipelined_devices && p.op == tile_op::gemm) return move_lost_lists(p, devices, cfg);
  plan out = p;
  std::vector<size_t> order(p.tiles.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return p.tiles[x].t.flops() > p.tiles[y].t.flops();
  });
  std::vector<const device_view*> by_id;
  for (const auto& d : devices)
    if (usable(d.profile)) by_id.push_back(&d);
  std::sort(by_id.begin(), by_id.end(),
            [](const device_view* x, const device_view* y) { return x->id < y->id; });
  std::map<int32_t, double> avail;
  for (const auto* d : by_id) avail[d->id] = std::max(0.0, d->ready_at);
  std::set<int32_t> used;
  out.bytes_down = out.bytes_up = 0;
  double max_finish = 0;
  for (size_t i : order) {
    auto& a = out.tiles[i];
    a.a_cached = a.b_cached = false;
    a.device = -1;
    a.predicted_finish = 0;
    const device_view* best = nullptr;
    tile_cost best_cost;
    double best_finish = std::numeric_limits<double>::infinity();
    for (const auto* d : by_id) {
      if (d->profile.memory_bytes < tile_working_set(a.t)) continue;
      const auto cost = predict_tile(a.t, p.problem.element_bytes, p.problem.result_element_bytes, d->profile, false, false);
      const double finish = avail[d->id] + cost.seconds;
      if (finish < best_finish) {
        best = d;
        best_cost = cost;
        best_finish = finish;
      }
    }
    if (best == nullptr) continue;
    a.device = best->id;
    a.predicted_finish = avail[best->id] = best_finish;
    used.insert(best->id);
    max_finish = std::max(max_finish, best_finish);
    out.bytes_down += best_cost.bytes_down;
    out.bytes_up += best_cost.bytes_up;
  }
  out.devices_used = static_cast<int32_t>(used.size());
  out.predicted_seconds = split_seconds(max_finish, out.bytes_down, out.bytes_up, out.tiles.size(),
                                        egress_tail(out, devices), cfg);
  out.bound = split_bound(out, devices, cfg);
  out.reason = replaced_reason(p, used.size());
  return out;
}

}  // namespace cleave
