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

// When the PS has sent tile i's operands, sending in plan order.
std::vector<double> sent_at(const plan& p, const planner_config& cfg) {
  std::vector<double> out;
  uint64_t sent = 0;
  for (const auto& a : p.tiles) {
    sent += tile_down_bytes(p, a);
    out.push_back(static_cast<double>(sent) / cfg.ps_egress);
  }
  return out;
}

// When `d` would return each of `tiles` of p, run in order from its ready
// time as the grid search runs them (pass_tile); the last is the device's finish.
double finish_of(const plan& p, const std::vector<size_t>& tiles, const device_view& d,
                 const std::vector<double>& sent, bool pipelined, std::vector<double>* each = nullptr) {
  const double ready = std::max(0.0, d.ready_at);
  device_stages s{ready, ready, ready};
  double finish = ready;
  const auto& pr = d.profile;
  for (size_t i : tiles) {
    const auto& a = p.tiles[i];
    const tile_pass done = pass_tile(pr.latency, 1.0 / pr.downlink, 1.0 / pr.flops, 1.0 / pr.uplink, s,
                                     tile_down_bytes(p, a), tile_flops(p, a.t), tile_up_bytes(p, a.t),
                                     sent[i], pipelined);
    s = done.after;
    finish = done.finish;
    if (each) each->push_back(finish);
  }
  return finish;
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
  const auto sent = sent_at(p, cfg);
  for (auto& [id, l] : load)
    l.finish = l.tiles.empty() ? 0 : finish_of(p, l.tiles, *l.view, sent, cfg.pipelined_devices);
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
        const double new_a = finish_of(p, b->tiles, *a.view, sent, cfg.pipelined_devices);
        const double new_b = a.tiles.empty() ? 0 : finish_of(p, a.tiles, *b->view, sent, cfg.pipelined_devices);
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
    std::vector<double> each;
    max_finish = std::max(max_finish, finish_of(p, l.tiles, *l.view, sent, cfg.pipelined_devices, &each));
    for (size_t x = 0; x < l.tiles.size(); ++x) {
      auto& a = p.tiles[l.tiles[x]];
      a.device = id;
      a.predicted_finish = each[x];
    }
  }
  p.devices_used = used;
  p.predicted_seconds =
      split_seconds(max_finish, p.bytes_down, p.bytes_up, p.tiles.size(), egress_tail(p, devices), cfg);
  p.bound = split_bound(p, devices, cfg);
  p.reason = split_reason(p);
}

}  // namespace cleave
