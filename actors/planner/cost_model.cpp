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
  // A shard sends over its own host's link at most.
  const double links = static_cast<double>(std::clamp<int32_t>(cfg.ps_links, 1, sharers));
  out.cfg.ps_egress *= links / s;
  out.cfg.ps_ingress *= links / s;
  return out;
}

tile_cost predict_tile(const tile& t, const device_profile& p, bool a_cached, bool b_cached) {
  tile_cost c;
  c.bytes_down = (a_cached ? 0 : t.a_bytes()) + (b_cached ? 0 : t.b_bytes());
  c.bytes_up = t.c_bytes();
  c.seconds = usable(p) ? tile_seconds(p.latency, 1.0 / p.downlink, 1.0 / p.flops, 1.0 / p.uplink,
                                       c.bytes_down, static_cast<double>(t.flops()), c.bytes_up)
                        : std::numeric_limits<double>::infinity();
  return c;
}

uint64_t tile_working_set(const tile& t) { return t.a_bytes() + t.b_bytes() + t.c_bytes(); }

plan_bound split_bound(const plan& p, const std::vector<device_view>& devices,
                       const planner_config& cfg) {
  const double egress = static_cast<double>(p.bytes_down) / cfg.ps_egress;
  const double ingress = static_cast<double>(p.bytes_up) / cfg.ps_ingress;
  double finish = 0;
  int32_t last = -1;
  for (const auto& a : p.tiles)
    if (a.device >= 0 && a.predicted_finish >= finish) {
      finish = a.predicted_finish;
      last = a.device;
    }
  if (egress >= finish && egress >= ingress) return plan_bound::ps_egress;
  if (ingress >= finish) return plan_bound::ps_ingress;
  const device_profile* profile = nullptr;
  for (const auto& d : devices)
    if (d.id == last) profile = &d.profile;
  if (profile == nullptr || !usable(*profile)) return plan_bound::compute;
  double compute = 0, down = 0, up = 0, latency = 0;
  for (const auto& a : p.tiles) {
    if (a.device != last) continue;
    compute += static_cast<double>(a.t.flops()) / profile->flops;
    down += static_cast<double>((a.a_cached ? 0 : a.t.a_bytes()) + (a.b_cached ? 0 : a.t.b_bytes()))
            / profile->downlink;
    up += static_cast<double>(a.t.c_bytes()) / profile->uplink;
    latency += 2 * profile->latency;
  }
  const double most = std::max({compute, down, up, latency});
  if (most == compute) return plan_bound::compute;
  if (most == down) return plan_bound::device_downlink;
  if (most == up) return plan_bound::device_uplink;
  return plan_bound::latency;
}

}  // namespace cleave
