#pragma once
// The relay tier of a fleet file: edge servers, regional VMs or gateways
// between the PS and its devices. A relay receives an operand block from the
// PS once, keeps it in a store of its memory (least recently used out) and
// serves every device behind it that needs it; results pass through it on
// their way up. For --role=plan and --role=simulate.
//
// Fleet file (JSON), beside "devices":
//   {"relays": [{"name": "city", "count": 32, "downlink": 1.25e9, "uplink": 1.25e9,
//                "fanout": 1.25e10, "latency": 0.005, "memory_bytes": 6.4e10}],
//    "devices": [{"name": "phone", ..., "count": 1024, "relay": "city"}]}
// A device entry naming a relay entry is spread over that entry's relays in
// contiguous runs (the first relay gets the first devices); a device entry
// naming none talks to the PS directly. downlink is the PS-to-relay rate,
// uplink the relay-to-PS rate, fanout what the relay sends its devices (and
// receives from them) in all, latency one way to the PS. Units: bytes,
// bytes/s, seconds.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "schema/fleet_member.hpp"

namespace cleave {

struct relay_profile {
  std::string name;
  double downlink = 1.25e9;
  double uplink = 1.25e9;
  double fanout = 1.25e10;
  double latency = 0.005;
  uint64_t memory_bytes = uint64_t{64} << 30;
};

struct fleet_relays {
  std::vector<relay_profile> relays;
  std::vector<int32_t> relay_of;  // by device: its relay's index, -1 if it talks to the PS itself
  bool empty() const { return relays.empty(); }
};

// Most relays a fleet may describe.
constexpr size_t max_relays = 65536;

caf::error validate(const relay_profile& r);

// A live relay's seat (its devices' joins carry it) as a profile.
relay_profile relay_profile_of(const relay_seat& seat);

// The relays of a fleet file's text (none: an empty tier, every device
// direct) for its `devices` devices, in the order parse_fleet lists them.
// `name` (the path) leads every error.
caf::expected<fleet_relays> parse_fleet_relays(std::string_view text, const std::string& name,
                                               size_t devices);
caf::expected<fleet_relays> read_fleet_relays(const std::string& path, size_t devices);

// `count` relays like `like`, the devices spread over them in contiguous
// runs (--relays=R with --relay-link and friends).
caf::expected<fleet_relays> even_relays(size_t count, const relay_profile& like, size_t devices);

}  // namespace cleave
