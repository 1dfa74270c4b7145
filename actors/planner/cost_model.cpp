#include "actors/planner/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace cleave {

bool usable(const device_profile& p) {
  auto positive = [](double x) { return std::isfinite(x) && x > 0; };
  return positive(p.flops) && positive(p.downlink) && positive(p.uplink) &&
         std::isfinite(p.latency) && p.latency >= 0 && p.memory_bytes > 0;
}

fleet_share fair_share(const std::vector<device_view>& devices, const planner_config& cfg,
                       int32_t sharers) {
  fleet_share out{devices, cfg};
  if (sharers <= 1) return out;
  const double s = static_cast<double>(sharers);
  for (auto& d : out.devices) {
    d.profile.flops /= s;
    d.profile.downlink /= s;
    d.profile.uplink /= s;
    d.profile.memory_bytes /= static_cast<uint64_t>(sharers);
  }
  for (auto& r : out.cfg.relays) {
    r.downlink /= s;
    r.uplink /= s;
    r.fanout /= s;
    r.memory_bytes /= static_cast<uint64_t>(sharers);
  }
  // A shard sends over its own host's link at most.
  const double links = static_cast<double>(std::clamp<int32_t>(cfg.ps_links, 1, sharers));
  out.cfg.ps_egress *= links / s;
  out.cfg.ps_ingress *= links / s;
  return out;
}

tile_cost predict_tile(const tile& t, uint64_t element_bytes, uint64_t result_element_bytes,
                       const device_profile& p, bool a_cached, bool b_cached) {
  tile_cost c;
  c.bytes_down = (a_cached ? 0 : t.a_bytes(element_bytes)) + (b_cached ? 0 : t.b_bytes(element_bytes));
  c.bytes_up = t.c_bytes(result_element_bytes);
  c.seconds = usable(p) ? tile_seconds(p.latency, 1.0 / p.downlink, 1.0 / p.flops, 1.0 / p.uplink,
                                       c.bytes_down, static_cast<double>(t.flops()), c.bytes_up)
                        : std::numeric_limits<double>::infinity();
  return c;
}

uint64_t tile_working_set(const tile& t) {
  return t.a_bytes(gemm_element_bytes) + t.b_bytes(gemm_element_bytes) + t.c_bytes(gemm_element_bytes);
}

uint32_t pipeline_depth(uint64_t memory_bytes, uint64_t cache_bytes, uint64_t working_set) {
  const uint64_t room = memory_bytes > cache_bytes ? memory_bytes - cache_bytes : 0;
  if (working_set == 0) return max_pipeline_depth;
  return static_cast<uint32_t>(std::clamp<uint64_t>(room / working_set, 1, max_pipeline_depth));
}

uint32_t device_pipeline_depth(uint64_t memory_bytes, uint32_t shards, uint64_t working_set) {
  const uint64_t memory = memory_bytes / std::max<uint32_t>(shards, 1);
  return pipeline_depth(memory, default_cache_bytes(memory), working_set);
}

std::vector<double> plan_sent_at(const plan& p, const planner_config& cfg) {
  std::vector<double> out;
  out.reserve(p.tiles.size());
  uint64_t sent = 0;
  for (const auto& a : p.tiles) {
    sent += tile_down_bytes(p, a);
    out.push_back(static_cast<double>(sent) / cfg.ps_egress);
  }
  return out;
}

double device_finish(const plan& p, const std::vector<size_t>& tiles, const device_view& d,
                     const std::vector<double>& sent, bool pipelined, std::vector<double>* each) {
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

double split_seconds(double max_finish, uint64_t bytes_down, uint64_t bytes_up, size_t tiles,
                     double tail, const planner_config& cfg) {
  return std::max({max_finish,
                   static_cast<double>(bytes_down) / cfg.ps_egress + (cfg.pipelined_devices ? tail : 0),
                   static_cast<double>(bytes_up) / cfg.ps_ingress})
         + static_cast<double>(tiles) * cfg.ps_tile_seconds;
}

double egress_tail(const plan& p, const std::vector<device_view>& devices) {
  if (p.local) return 0;
  std::map<int32_t, const device_profile*> by_id;
  for (const auto& d : devices) by_id[d.id] = &d.profile;
  double tail = std::numeric_limits<double>::infinity();
  for (const auto& a : p.tiles) {
    const auto it = by_id.find(a.device);
    if (it == by_id.end() || !usable(*it->second)) continue;
    const device_profile& d = *it->second;
    tail = std::min(tail, tile_seconds(d.latency, 0, 1.0 / d.flops, 1.0 / d.uplink, 0,
                                       tile_flops(p, a.t), tile_up_bytes(p, a.t)));
  }
  return std::isfinite(tail) ? tail : 0;
}

plan_parts parts_of(const plan& p, const std::vector<device_view>& devices,
                    const planner_config& cfg) {
  plan_parts out;
  if (p.local) return out;
  out.ps_egress = static_cast<double>(p.bytes_down) / cfg.ps_egress;
  out.ps_ingress = static_cast<double>(p.bytes_up) / cfg.ps_ingress;
  out.ps_tiles = static_cast<double>(p.tiles.size()) * cfg.ps_tile_seconds;
  double finish = 0;
  for (const auto& a : p.tiles)
    if (a.device >= 0 && a.predicted_finish >= finish) {
      finish = a.predicted_finish;
      out.last_device = a.device;
    }
  const device_profile* profile = nullptr;
  for (const auto& d : devices)
    if (d.id == out.last_device) profile = &d.profile;
  if (profile == nullptr || !usable(*profile)) return out;
  for (const auto& a : p.tiles) {
    if (a.device != out.last_device) continue;
    out.compute += tile_flops(p, a.t) / profile->flops;
    out.down += static_cast<double>(tile_down_bytes(p, a)) / profile->downlink;
    out.up += static_cast<double>(tile_up_bytes(p, a.t)) / profile->uplink;
    out.latency += 2 * profile->latency;
  }
  return out;
}

double pipelined_seconds(const plan& p, const std::vector<device_view>& devices,
                         const planner_config& cfg) {
  if (p.local) return p.local_seconds;
  struct stages {
    const device_view* view = nullptr;
    double down = 0, compute = 0, up = 0, arrived = 0;
  };
  std::map<int32_t, stages> at;
  for (const auto& d : devices) {
    auto& s = at[d.id];
    s.view = &d;
    s.down = s.compute = s.up = std::max(0.0, d.ready_at);
  }
  double finish = 0;
  for (const auto& a : p.tiles) {
    auto it = at.find(a.device);
    if (it == at.end() || !usable(it->second.view->profile))
      return std::numeric_limits<double>::infinity();
    auto& s = it->second;
    const device_profile& d = s.view->profile;
    const uint64_t down = tile_down_bytes(p, a);
    s.down += static_cast<double>(down) / d.downlink;
    s.compute = std::max(s.down + d.latency, s.compute) + tile_flops(p, a.t) / d.flops;
    s.up = std::max(s.compute, s.up) + static_cast<double>(tile_up_bytes(p, a.t)) / d.uplink;
    finish = std::max(finish, s.up + d.latency);
  }
  return split_seconds(finish, p.bytes_down, p.bytes_up, p.tiles.size(), 0, cfg);
}

double ps_link_seconds(const plan& p, const std::vector<device_view>& devices,
                       const planner_config& cfg) {
  if (p.local) return p.local_seconds;
  std::map<int32_t, const device_view*> by_id;
  std::map<int32_t, double> idle_at;
  for (const auto& d : devices) {
    by_id[d.id] = &d;
    idle_at[d.id] = std::max(0.0, d.ready_at);
  }
  double egress_free = 0;
  struct upload {
    double begins, ends;
    uint64_t bytes;
  };
  std::vector<upload> results;
  results.reserve(p.tiles.size());
  for (const auto& a : p.tiles) {
    if (a.device < 0) continue;  // the PS's own, computed while it waits
    auto it = by_id.find(a.device);
    if (it == by_id.end() || !usable(it->second->profile))
      return std::numeric_limits<double>::infinity();
    const device_profile& d = it->second->profile;
    const uint64_t down = tile_down_bytes(p, a);
    const uint64_t up = tile_up_bytes(p, a.t);
    const double sending = egress_free;
    egress_free += static_cast<double>(down) / cfg.ps_egress;
    const double whole = tile_seconds(d.latency, 1.0 / d.downlink, 1.0 / d.flops, 1.0 / d.uplink, down,
                                      tile_flops(p, a.t), up);
    const double downloading = static_cast<double>(down) / d.downlink;
    const double uploading = static_cast<double>(up) / d.uplink;
    double& idle = idle_at[a.device];
    idle = std::max(std::max(idle, sending) + whole, egress_free + whole - downloading);
    results.push_back({idle - uploading - d.latency, idle, up});
  }
  std::sort(results.begin(), results.end(),
            [](const upload& x, const upload& y) { return x.begins < y.begins; });
  double ingress_free = 0, last = 0;
  for (const auto& u : results) {
    ingress_free = std::max(ingress_free, u.begins) + static_cast<double>(u.bytes) / cfg.ps_ingress;
    last = std::max({last, u.ends, ingress_free});
  }
  return split_seconds(last, p.bytes_down, p.bytes_up, p.tiles.size(), 0, cfg);
}

plan_bound split_bound(const plan& p, const std::vector<device_view>& devices,
                       const planner_config& cfg) {
  const plan_parts parts = parts_of(p, devices, cfg);
  double finish = 0;
  for (const auto& a : p.tiles)
    if (a.device >= 0) finish = std::max(finish, a.predicted_finish);
  if (parts.ps_tiles > finish && parts.ps_tiles > parts.ps_egress && parts.ps_tiles > parts.ps_ingress)
    return plan_bound::ps_tiles;
  // A tile's finish includes the PS's sending before it: a plan whose last
  // tile waited on the egress ends at most its tail after the egress.
  const double egress_end = parts.ps_egress + (cfg.pipelined_devices ? egress_tail(p, devices) : 0);
  if (egress_end >= finish && parts.ps_egress >= parts.ps_ingress) return plan_bound::ps_egress;
  if (parts.ps_ingress >= finish) return plan_bound::ps_ingress;
  const double most = std::max({parts.compute, parts.down, parts.up, parts.latency});
  if (most == 0 || most == parts.compute) return plan_bound::compute;
  if (most == parts.down) return plan_bound::device_downlink;
  if (most == parts.up) return plan_bound::device_uplink;
  return plan_bound::latency;
}

}  // namespace cleave
