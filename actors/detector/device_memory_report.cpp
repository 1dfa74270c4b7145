#include "actors/detector/device_memory_report.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include <spdlog/spdlog.h>

#include "actors/detector/detector_protocol.hpp"

namespace cleave {

nlohmann::json device_memory_report(caf::actor_system& sys, const caf::actor& detector) {
  nlohmann::json out = nlohmann::json::object();
  if (!detector) return out;
  std::vector<device_health> health;
  caf::scoped_actor self{sys};
  self->request(detector, std::chrono::seconds(5), caf::get_atom::value)
    .receive([&](std::vector<device_health>& got) { health = std::move(got); },
             [&](caf::error& err) { spdlog::warn("the detector did not report: {}", sys.render(err)); });
  std::sort(health.begin(), health.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  uint64_t largest = 0;
  auto processes = nlohmann::json::array();
  for (const auto& h : health) {
    if (h.peak_rss_bytes == 0) continue;
    largest = std::max(largest, h.peak_rss_bytes);
    processes.push_back({{"id", h.id}, {"peak_rss_bytes", h.peak_rss_bytes}});
  }
  if (processes.empty()) return out;
  out["device_peak_rss_bytes"] = largest;
  out["device_processes"] = std::move(processes);
  return out;
}

}  // namespace cleave
