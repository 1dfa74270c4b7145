#include "actors/planner/speed_order.hpp"

#include <algorithm>
#include <map>

#include "actors/planner/dominance.hpp"

namespace cleave {

namespace {

device_figures figures_of(const device_view& d) {
  const auto& p = d.profile;
  return {d.ready_at, p.latency, p.flops, p.downlink, p.uplink, p.memory_bytes};
}

struct device_load {
  const device_view* view = nullptr;
  std::vector<size_t> tiles;  // indices into the plan, in order
  double flops = 0;
  double finish = 0;
};

// When `d` would finish `tiles` of p, run in order from its ready time.
double finish_of(const plan& p, const std::vector<size_t>& tiles, const device_view& d) {
  double t = std::max(0.0, d.ready_at);
  for (size_t i : tiles) {
    const auto& a = p.tiles[i];
    t += predict_tile(a.t, p.problem.element_bytes, d.profile, a.a_cached, a.b_cached).seconds;
  }
  return t;
}

}  // namespace

void give_faster_devices_more(plan& p, const std::vector<device_view>& devices,
                              const planner_config& cfg) {
  if (p.local || p.tiles.empty()) return;
  std::map<int32_t, device_load> load;
  for (const auto& d : devices)
    if (usable(d.profile)) load[d.id].view = &d;
  for (size_t i = 0; i < p.tiles.size(); ++i) {
    auto it = load.find(p.tiles[i].device);
    if (it == load.end()) return;  // planned on other devices: leave it
    it->second.tiles.push_back(i);
    it->second.flops += static_cast<double>(p.tiles[i].t.flops());
  }
  for (auto& [id, l] : load) l.finish = l.tiles.empty() ? 0 : finish_of(p, l.tiles, *l.view);
  std::vector<device_load*> loaded;
  for (auto& [id, l] : load)
    if (!l.tiles.empty()) loaded.push_back(&l);
  bool changed = false;
  // Every swap moves FLOPs to a dominating device, so this ends; the bound
  // on rounds only caps the work.
  for (size_t round = 0; round < 4 * loaded.size() + 4; ++round) {
    bool swapped = false;
    for (device_load* b : loaded) {
      if (b->tiles.empty()) continue;
      for (auto& [id, a] : load) {
        if (&a == b || !(a.flops < b->flops) || !dominates(figures_of(*a.view), figures_of(*b->view))) continue;
        const double new_a = finish_of(p, b->tiles, *a.view);
        const double new_b = a.tiles.empty() ? 0 : finish_of(p, a.tiles, *b->view);
        if (std::max(new_a, new_b) > p.predicted_seconds) continue;
        std::swap(a.tiles, b->tiles);
        std::swap(a.flops, b->flops);
        a.finish = new_a;
        b->finish = new_b;
        if (std::find(loaded.begin(), loaded.end(), &a) == loaded.end()) loaded.push_back(&a);
        swapped = changed = true;
        break;
      }
    }
    if (!swapped) break;
  }
  if (!changed) return;
  double max_finish = 0;
  int32_t used = 0;
  for (auto& [id, l] : load) {
    if (l.tiles.empty()) continue;
    ++used;
    double t = std::max(0.0, l.view->ready_at);
    for (size_t i : l.tiles) {
      auto& a = p.tiles[i];
      a.device = id;
      t += predict_tile(a.t, p.problem.element_bytes, l.view->profile, a.a_cached, a.b_cached).seconds;
      a.predicted_finish = t;
    }
    max_finish = std::max(max_finish, t);
  }
  p.devices_used = used;
  p.predicted_seconds =
      split_seconds(max_finish, p.bytes_down, p.bytes_up, p.tiles.size(), egress_tail(p, devices), cfg);
  p.bound = split_bound(p, devices, cfg);
  p.reason = split_reason(p);
}

}  // namespace cleave
