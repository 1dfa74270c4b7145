#include "schema/profile.hpp"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "schema/json_file.hpp"

#include "schema/errors.hpp"

namespace cleave {

namespace {

struct preset {
  const char* name;
  double flops;
  double memory;
  double down, up, latency;
};

// Rough public figures for float32 GEMM throughput and typical links.
constexpr preset presets[] = {
  {"phone", 2e10, 2e9, 5e7, 1e7, 0.02},       // mobile SoC, Wi-Fi/5G
  {"edge", 5e10, 4e9, 1e8, 2e7, 0.005},       // edge box on a LAN uplink
  {"laptop", 1.5e11, 8e9, 1e8, 5e7, 0.002},   // idle laptop on Wi-Fi 6
  {"vm", 6e10, 4e9, 1.25e8, 1.25e8, 0.001},   // 2-vCPU cloud VM, 1 Gbps
  {"fast", 1e13, 6.4e10, 1e11, 1e11, 0.0},    // faster than this host: overhead runs
};

}  // namespace

caf::error validate(const device_profile& p) {
  auto bad = [&](const char* what, double v) {
    return fail("device profile '" + p.name + "': " + what + " must be finite and positive, got "
                + std::to_string(v));
  };
  if (!(std::isfinite(p.flops) && p.flops > 0 && p.flops < 1e18)) return bad("flops", p.flops);
  if (p.memory_bytes < (1u << 20)) return fail("device profile '" + p.name + "': memory_bytes below 1 MiB");
  if (!(std::isfinite(p.downlink) && p.downlink > 0)) return bad("downlink", p.downlink);
  if (!(std::isfinite(p.uplink) && p.uplink > 0)) return bad("uplink", p.uplink);
  if (!(std::isfinite(p.latency) && p.latency >= 0 && p.latency < 60))
    return fail("device profile '" + p.name + "': latency must be in [0, 60) seconds");
  return caf::none;
}

caf::expected<device_profile> preset_profile(const std::string& name) {
  for (const auto& p : presets)
    if (name == p.name)
      return device_profile{p.name, p.flops, static_cast<uint64_t>(p.memory), p.down, p.up, p.latency};
  std::string known;
  for (const auto& p : presets) known += (known.empty() ? "" : ", ") + std::string{p.name};
  return fail("unknown device preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& p : presets) out.emplace_back(p.name);
  return out;
}

std::vector<device_profile> default_fleet(int n) {
  static const char* cycle[] = {"phone", "edge", "laptop", "vm"};
  std::vector<device_profile> out;
  for (int i = 0; i < n; ++i) out.push_back(*preset_profile(cycle[i % 4]));
  return out;
}

caf::expected<std::vector<device_profile>> read_fleet_file(const std::string& path, size_t max_devices) {
  auto text = read_small_file(path, "fleet file");
  if (!text) return text.error();
  return parse_fleet(*text, path, max_devices);
}

caf::expected<std::vector<device_profile>> parse_fleet(std::string_view text, const std::string& path,
                                                       size_t max_devices) {
  auto parsed = parse_json(text, path);
  if (!parsed) return parsed.error();
  const nlohmann::json& doc = *parsed;
  if (!doc.is_object() || !doc.contains("devices") || !doc["devices"].is_array())
    return fail(path + ": expected an object with a \"devices\" array");
  std::vector<device_profile> fleet;
  size_t index = 0;
  for (const auto& entry : doc["devices"]) {
    const std::string where = path + ": devices[" + std::to_string(index++) + "]";
    if (!entry.is_object()) return fail(where + ": expected an object");
    device_profile p;
    if (entry.contains("preset")) {
      if (!entry["preset"].is_string()) return fail(where + ": preset must be a string");
      auto base = preset_profile(entry["preset"].get<std::string>());
      if (!base) return fail(where + ": " + describe(base.error()));
      p = *base;
    }
    auto number = [&](const char* key, double& out) -> caf::error {
      if (!entry.contains(key)) return caf::none;
      if (!entry[key].is_number()) return fail(where + ": " + key + " must be a number");
      out = entry[key].get<double>();
      return caf::none;
    };
    double memory = static_cast<double>(p.memory_bytes);
    for (auto [key, slot] : {std::pair{"flops", &p.flops}, {"memory_bytes", &memory},
                             {"downlink", &p.downlink}, {"uplink", &p.uplink},
                             {"latency", &p.latency}})
      if (auto err = number(key, *slot)) return err;
    if (!(memory >= 0 && memory < 1e15)) return fail(where + ": memory_bytes out of range");
    p.memory_bytes = static_cast<uint64_t>(memory);
    if (entry.contains("name")) {
      if (!entry["name"].is_string()) return fail(where + ": name must be a string");
      p.name = entry["name"].get<std::string>();
    }
    if (p.name.empty()) return fail(where + ": needs a preset or a name");
    if (auto err = validate(p)) return fail(where + ": " + describe(err));
    double count = 1;
    if (auto err = number("count", count)) return err;
    if (!(count >= 1 && count <= static_cast<double>(max_devices) && count == std::floor(count)))
      return fail(where + ": count must be an integer in [1, " + std::to_string(max_devices) + "]");
    if (fleet.size() + static_cast<size_t>(count) > max_devices)
      return fail(path + ": more than " + std::to_string(max_devices) + " devices");
    fleet.insert(fleet.end(), static_cast<size_t>(count), p);
  }
  if (fleet.empty()) return fail(path + ": the fleet has no devices");
  return fleet;
}

}  // namespace cleave
