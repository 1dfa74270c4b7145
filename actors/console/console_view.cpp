#include "actors/console/console_view.hpp"

#include <algorithm>
#include <map>

namespace cleave {

nlohmann::json render_console(const nlohmann::json& training, const planner_view& planner,
                              const std::vector<device_health>& health,
                              const event_log& events) {
  std::map<int32_t, const device_health*> by_id;
  for (const auto& h : health) by_id[h.id] = &h;
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& m : planner.members) {
    const bool suspected =
      std::find(planner.suspected.begin(), planner.suspected.end(), m.id) != planner.suspected.end();
    nlohmann::json d = {{"id", m.id},
                        {"profile", m.profile.name},
                        {"flops", m.profile.flops},
                        {"memory_bytes", m.profile.memory_bytes},
                        {"downlink", m.profile.downlink},
                        {"uplink", m.profile.uplink},
                        {"latency", m.profile.latency},
                        {"state", suspected ? "suspected" : "alive"}};
    if (auto it = by_id.find(m.id); it != by_id.end()) {
      d["phi"] = it->second->phi;
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
                          {"devices", std::move(devices)}};
  if (!planner.error.empty()) fleet["planner_error"] = planner.error;
  nlohmann::json log = nlohmann::json::array();
  for (const auto& ev : events.events()) {
    nlohmann::json e = {{"time", ev.time}, {"kind", ev.kind}};
    if (ev.device >= 0) e["device"] = ev.device;
    if (ev.phi != 0) e["phi"] = ev.phi;
    log.push_back(std::move(e));
  }
  return {{"training", training},
          {"fleet", std::move(fleet)},
          {"events", std::move(log)},
          {"events_dropped", events.dropped()}};
}

}  // namespace cleave
