#include "actors/console/console_view.hpp"

#include <cmath>

#include <algorithm>
#include <map>
#include <set>

#include "actors/console/relay_view.hpp"

namespace cleave {

namespace {

bool listed(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

nlohmann::json render_plan(const plan& p) {
  std::set<int32_t> devices;
  for (const auto& a : p.tiles)
    if (a.device >= 0) devices.insert(a.device);
  return {{"m", p.problem.m},
          {"n", p.problem.n},
          {"k", p.problem.k},
          {"role", to_string(p.problem.role)},
          {"local", p.local},
          {"grid", {p.grid_m, p.grid_n, p.grid_k}},
          {"tiles", p.tiles.size()},
          {"devices", std::vector<int32_t>(devices.begin(), devices.end())},
          {"predicted_seconds", plan_seconds(p)},
          {"bound", to_string(p.bound)}};
}

nlohmann::json render_console(const nlohmann::json& training, const planner_view& planner,
                              const std::vector<device_health>& health,
                              const event_log& events, const control_view& controls) {
  std::map<int32_t, const device_health*> by_id;
  for (const auto& h : health) by_id[h.id] = &h;
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& m : planner.members) {
    // A suspected device is left out of plans whether draining or not: the
    // suspicion is the more urgent news.
    const char* state = listed(planner.suspected, m.id) ? "suspected"
                        : listed(planner.draining, m.id) ? "draining"
                                                         : "alive";
    nlohmann::json d = {{"id", m.id},
                        {"profile", m.profile.name},
                        {"flops", m.profile.flops},
                        {"memory_bytes", m.profile.memory_bytes},
                        {"downlink", m.profile.downlink},
                        {"uplink", m.profile.uplink},
                        {"latency", m.profile.latency},
                        {"state", state}};
    if (!m.relay.empty()) d["relay"] = m.relay.name;
    if (auto it = by_id.find(m.id); it != by_id.end()) {
      d["phi"] = it->second->phi;
      // A device process's own figure, beside the memory it declared.
      if (it->second->peak_rss_bytes > 0) d["peak_rss_bytes"] = it->second->peak_rss_bytes;
      by_id.erase(it);
    }
    devices.push_back(std::move(d));
  }
  for (const auto& [id, h] : by_id)
    devices.push_back({{"id", id},
                       {"state", h->quarantined ? "quarantined"
                                 : h->dead      ? "dead"
                                                : "unknown to the planner"}});
  nlohmann::json fleet = {{"version", planner.version},
                          {"quorum_reached", planner.quorum},
                          {"alive", planner.members.size() - planner.suspected.size()},
                          {"suspected", planner.suspected.size()},
                          {"draining", planner.draining.size()},
                          {"devices", std::move(devices)}};
  if (auto relays = render_relays(training, planner); !relays.empty()) fleet["relays"] = std::move(relays);
  if (!planner.error.empty()) fleet["planner_error"] = planner.error;
  nlohmann::json log = nlohmann::json::array();
  for (const auto& ev : events.events()) {
    nlohmann::json e = {{"time", ev.time}, {"kind", ev.kind}};
    if (ev.device >= 0) e["device"] = ev.device;
    if (ev.phi != 0) e["phi"] = ev.phi;
    if (!ev.detail.empty()) e["detail"] = ev.detail;
    log.push_back(std::move(e));
  }
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& p : planner.plans) plans.push_back(render_plan(p));
  return {{"training", training},
          {"fleet", std::move(fleet)},
          {"plans", std::move(plans)},
          {"controls", {{"enabled", controls.enabled},
                        {"loop_attached", controls.loop.attached},
                        {"checkpoints", controls.loop.has_checkpoint_dir},
                        {"paused", controls.loop.paused},
                        {"checkpoint_pending", controls.checkpoint_pending}}},
          {"events", std::move(log)},
          {"events_dropped", events.dropped()}};
}

nlohmann::json render_heartbeat_delay(const delay_histogram& d) {
  nlohmann::json buckets = nlohmann::json::array();
  uint64_t below = 0;
  for (size_t i = 0; i < d.counts.size(); ++i) {
    below += d.counts[i];
    nlohmann::json le = i < delay_histogram::finite_buckets ? nlohmann::json(delay_histogram::bounds[i])
                                                             : nlohmann::json("+Inf");
    buckets.push_back({{"le", le}, {"count", below}});
  }
  auto q = [&](double p) {  // JSON has no infinity: past the last bound is null
    const double v = d.quantile(p);
    return std::isinf(v) ? nlohmann::json() : nlohmann::json(v);
  };
  return {{"count", d.total}, {"sum_seconds", d.sum_seconds}, {"p50_seconds", q(0.5)},
          {"p99_seconds", q(0.99)}, {"buckets", std::move(buckets)}};
}

}  // namespace cleave
