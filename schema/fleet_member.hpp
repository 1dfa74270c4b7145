#pragma once
// One member of the fleet as the planner lists it: its id, the actor that
// computes its tiles (a device, or a remote device's proxy) and its declared
// profile. The planner's fleet answers carry it to the PS engines, the
// console and the training loop, so it lives below all of them.

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include "schema/profile.hpp"

namespace cleave {

// The relay a device reached the job through (schema/edge_codec.hpp's join),
// or none. Devices behind one relay share its operand store: the PS sends a
// block to the relay once, not to each of them.
// The relay declares its links as a device declares its own (bytes/s,
// seconds one way): to and from the PS, and to and from its devices in all.
struct relay_seat {
  std::string name;          // empty: the device talks to the PS itself
  uint64_t store_bytes = 0;  // the relay's --relay-memory
  double downlink = 0;       // PS to relay (--relay-link)
  double uplink = 0;         // relay to PS (--relay-link)
  double fanout = 0;         // relay to and from its devices (--relay-fanout)
  double latency = 0;        // one way to the PS (--relay-latency)
  bool empty() const { return name.empty(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, relay_seat& x) {
  return f(caf::meta::type_name("relay_seat"), x.name, x.store_bytes, x.downlink, x.uplink, x.fanout, x.latency);
}

struct fleet_member {
  int32_t id = -1;
  caf::actor handle;
  device_profile profile;
  relay_seat relay;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fleet_member& x) {
  return f(caf::meta::type_name("fleet_member"), x.id, x.handle, x.profile, x.relay);
}

}  // namespace cleave
