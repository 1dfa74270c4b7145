#pragma once
// What a device declares about itself (schema/profile.capnp), the shipped
// presets, and fleet files for the in-process emulated fleet.
//
// Fleet file (JSON):
//   {"devices": [
//      {"preset": "phone", "count": 8},
//      {"preset": "laptop", "count": 2, "flops": 5e10},          // preset with overrides
//      {"name": "rpi", "flops": 2e9, "memory_bytes": 1e9,
//       "downlink": 1.25e7, "uplink": 2.5e6, "latency": 0.005, "count": 4}
//   ]}
// Units: FLOP/s, bytes, bytes/s, seconds (one-way latency).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

namespace cleave {

struct device_profile {
  std::string name;
  double flops = 0;
  uint64_t memory_bytes = 0;
  double downlink = 0;  // bytes/s towards the device
  double uplink = 0;    // bytes/s from the device
  double latency = 0;   // seconds, one way
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_profile& x) {
  return f(caf::meta::type_name("device_profile"), x.name, x.flops, x.memory_bytes, x.downlink,
           x.uplink, x.latency);
}

// A device's operand cache size unless its options set one: half its
// declared memory, at most 1 GiB. One rule for live devices, simulated ones
// and the planner (a block larger than this is sent again for every tile).
inline uint64_t default_cache_bytes(uint64_t memory_bytes) {
  return memory_bytes / 2 < (uint64_t{1} << 30) ? memory_bytes / 2 : uint64_t{1} << 30;
}

// Checks every figure is finite, positive and within sane bounds.
caf::error validate(const device_profile& p);

// "phone", "edge", "laptop", "vm" and "fast" (faster than any host here: for
// measuring framework overhead without pacing).
caf::expected<device_profile> preset_profile(const std::string& name);
std::vector<std::string> preset_names();

// Most devices a fleet file may describe: emulated ones are actors of one
// process; a fleet that is only planned or simulated (--role=plan,
// --role=simulate) may be far larger, described by counts.
constexpr size_t max_emulated_fleet = 4096;
constexpr size_t max_described_fleet = 1000000;

caf::expected<std::vector<device_profile>> read_fleet_file(const std::string& path,
                                                           size_t max_devices = max_emulated_fleet);
// A fleet file's text; `name` (the path) leads every error. Refused before
// any allocation when an entry's count or the total passes max_devices.
caf::expected<std::vector<device_profile>> parse_fleet(std::string_view text, const std::string& name,
                                                       size_t max_devices = max_emulated_fleet);

// n devices cycling through phone, edge, laptop, vm.
std::vector<device_profile> default_fleet(int n);

}  // namespace cleave
