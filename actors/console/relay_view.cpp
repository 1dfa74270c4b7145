#include "actors/console/relay_view.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace cleave {

namespace {

struct relay_row {
  uint64_t store_bytes = 0;
  std::vector<int32_t> devices;
  size_t suspected = 0;
  uint64_t bytes_down = 0, bytes_up = 0, operands = 0, named = 0, misses = 0;
};

uint64_t count(const nlohmann::json& row, const char* key) {
  const auto& v = row.value(key, nlohmann::json());
  return v.is_number_unsigned() || v.is_number_integer() ? v.get<uint64_t>() : 0;
}

}  // namespace

nlohmann::json render_relays(const nlohmann::json& training, const planner_view& planner) {
  std::map<std::string, relay_row> rows;
  std::map<int32_t, relay_row*> row_of;
  for (const auto& m : planner.members) {
    if (m.relay.empty()) continue;
    auto& r = rows[m.relay.name];
    r.store_bytes = m.relay.store_bytes;
    r.devices.push_back(m.id);
    if (std::find(planner.suspected.begin(), planner.suspected.end(), m.id) != planner.suspected.end()) ++r.suspected;
    row_of[m.id] = &r;
  }
  if (training.is_object())
    for (const auto& d : training.value("per_device", nlohmann::json::array())) {
      if (!d.is_object() || !d.contains("id") || !d["id"].is_number_integer()) continue;
      auto it = row_of.find(d["id"].get<int32_t>());
      if (it == row_of.end()) continue;
      auto& r = *it->second;
      r.bytes_down += count(d, "bytes_down");
      r.bytes_up += count(d, "bytes_up");
      r.operands += count(d, "operands");
      r.named += count(d, "operands_named");
      r.misses += count(d, "misses");
    }
  auto out = nlohmann::json::array();
  for (const auto& [name, r] : rows) {
    const uint64_t held = r.named > r.misses ? r.named - r.misses : 0;
    out.push_back({{"name", name},
                   {"state", r.suspected == r.devices.size() ? "suspected" : "serving"},
                   {"store_bytes", r.store_bytes},
                   {"devices", r.devices},
                   {"bytes_down", r.bytes_down},
                   {"bytes_up", r.bytes_up},
                   {"operands", r.operands},
                   {"operands_named", r.named},
                   {"misses", r.misses},
                   {"hit_rate", r.operands == 0 ? 0.0 : static_cast<double>(held) / static_cast<double>(r.operands)}});
  }
  return out;
}

}  // namespace cleave
