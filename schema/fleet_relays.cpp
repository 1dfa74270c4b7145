#include "schema/fleet_relays.hpp"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "schema/errors.hpp"
#include "schema/json_file.hpp"

namespace cleave {

relay_profile relay_profile_of(const relay_seat& seat) {
  return relay_profile{seat.name, seat.downlink, seat.uplink, seat.fanout, seat.latency, seat.store_bytes};
}

caf::error validate(const relay_profile& r) {
  auto rate = [&](const char* what, double v) -> caf::error {
    if (std::isfinite(v) && v > 0 && v < 1e15) return caf::none;
    return fail("relay '" + r.name + "': " + what + " must be finite and positive, got " + std::to_string(v));
  };
  if (r.name.empty()) return fail("a relay needs a name");
  if (auto err = rate("downlink", r.downlink)) return err;
  if (auto err = rate("uplink", r.uplink)) return err;
  if (auto err = rate("fanout", r.fanout)) return err;
  if (!(std::isfinite(r.latency) && r.latency >= 0 && r.latency < 60))
    return fail("relay '" + r.name + "': latency must be in [0, 60) seconds");
  if (r.memory_bytes < (uint64_t{1} << 20)) return fail("relay '" + r.name + "': memory_bytes below 1 MiB");
  return caf::none;
}

namespace {

// Devices [first, first + count) spread over relays [r0, r0 + relays) in
// contiguous runs whose lengths differ by at most one.
void spread(std::vector<int32_t>& relay_of, size_t first, size_t count, size_t r0, size_t relays) {
  for (size_t i = 0; i < count; ++i)
    relay_of[first + i] = static_cast<int32_t>(r0 + i * relays / count);
}

}  // namespace

caf::expected<fleet_relays> parse_fleet_relays(std::string_view text, const std::string& name,
                                               size_t devices) {
  auto parsed = parse_json(text, name);
  if (!parsed) return parsed.error();
  const nlohmann::json& doc = *parsed;
  fleet_relays out;
  out.relay_of.assign(devices, -1);
  if (!doc.is_object() || !doc.contains("relays")) return out;
  if (!doc["relays"].is_array()) return fail(name + ": \"relays\" must be an array");
  std::map<std::string, std::pair<size_t, size_t>> groups;  // name: first relay, count
  size_t index = 0;
  for (const auto& entry : doc["relays"]) {
    const std::string where = name + ": relays[" + std::to_string(index++) + "]";
    if (!entry.is_object()) return fail(where + ": expected an object");
    relay_profile r;
    if (!entry.contains("name") || !entry["name"].is_string())
      return fail(where + ": needs a name (a string)");
    r.name = entry["name"].get<std::string>();
    auto number = [&](const char* key, double& slot) -> caf::error {
      if (!entry.contains(key)) return caf::none;
      if (!entry[key].is_number()) return fail(where + ": " + key + " must be a number");
      slot = entry[key].get<double>();
      return caf::none;
    };
    double memory = static_cast<double>(r.memory_bytes), count = 1;
    for (auto [key, slot] : {std::pair{"downlink", &r.downlink}, {"uplink", &r.uplink},
                             {"fanout", &r.fanout}, {"latency", &r.latency},
                             {"memory_bytes", &memory}, {"count", &count}})
      if (auto err = number(key, *slot)) return err;
    if (!(memory >= 0 && memory < 1e15)) return fail(where + ": memory_bytes out of range");
    r.memory_bytes = static_cast<uint64_t>(memory);
    if (auto err = validate(r)) return fail(where + ": " + describe(err));
    if (!(count >= 1 && count == std::floor(count) && count <= static_cast<double>(max_relays)))
      return fail(where + ": count must be an integer in [1, " + std::to_string(max_relays) + "]");
    if (out.relays.size() + static_cast<size_t>(count) > max_relays)
      return fail(name + ": more than " + std::to_string(max_relays) + " relays");
    if (groups.count(r.name)) return fail(where + ": a second relay entry named '" + r.name + "'");
    groups[r.name] = {out.relays.size(), static_cast<size_t>(count)};
    for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
      relay_profile one = r;
      if (count > 1) one.name += "-" + std::to_string(i);
      out.relays.push_back(std::move(one));
    }
  }
  if (!doc.contains("devices") || !doc["devices"].is_array())
    return fail(name + ": expected a \"devices\" array");
  // Device entries as parse_fleet reads them (it checked their counts).
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> behind;  // relay entry: device runs
  size_t device = 0;
  index = 0;
  for (const auto& entry : doc["devices"]) {
    const std::string where = name + ": devices[" + std::to_string(index++) + "]";
    const size_t count = entry.is_object() && entry.contains("count") && entry["count"].is_number()
                           ? static_cast<size_t>(entry["count"].get<double>())
                           : 1;
    if (device + count > devices) return fail(name + ": the device counts disagree with the fleet");
    if (entry.is_object() && entry.contains("relay")) {
      if (!entry["relay"].is_string()) return fail(where + ": relay must be a string");
      const auto relay = entry["relay"].get<std::string>();
      if (!groups.count(relay)) return fail(where + ": no relay entry named '" + relay + "'");
      behind[relay].emplace_back(device, count);
    }
    device += count;
  }
  // Each relay entry's devices, over all the device entries naming it, in order.
  for (const auto& [relay, runs] : behind) {
    size_t total = 0;
    for (const auto& run : runs) total += run.second;
    const auto [r0, relays] = groups[relay];
    size_t seen = 0;
    for (const auto& [first, count] : runs)
      for (size_t i = 0; i < count; ++i, ++seen)
        out.relay_of[first + i] = static_cast<int32_t>(r0 + seen * relays / total);
  }
  return out;
}

caf::expected<fleet_relays> read_fleet_relays(const std::string& path, size_t devices) {
  auto text = read_small_file(path, "fleet file");
  if (!text) return text.error();
  return parse_fleet_relays(*text, path, devices);
}

caf::expected<fleet_relays> even_relays(size_t count, const relay_profile& like, size_t devices) {
  if (count == 0 || count > max_relays)
    return fail("--relays: between 1 and " + std::to_string(max_relays) + " relays");
  if (count > devices) return fail("--relays: more relays than devices");
  if (auto err = validate(like)) return err;
  fleet_relays out;
  for (size_t i = 0; i < count; ++i) {
    relay_profile r = like;
    r.name += "-" + std::to_string(i);
    out.relays.push_back(std::move(r));
  }
  out.relay_of.assign(devices, -1);
  spread(out.relay_of, 0, devices, 0, count);
  return out;
}

}  // namespace cleave
