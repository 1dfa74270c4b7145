#pragma once
// A relay (--role=relay): an edge server, regional VM or gateway between the
// ps and its devices. Devices join the relay's edge as they would the ps's;
// for each, the relay opens a connection to the ps's edge and passes the
// device's frames up and the ps's down. Its join carries the relay's name
// and store size, so the ps sends each operand block to the relay once a
// step and names it to the relay's other devices, and the relay fills the
// values in from its store (relay_books.hpp). The ps's egress then falls
// from once per device to once per relay.
//
// Trust: the relay is trusted like a ps shard (it could drop or delay
// frames, never make a wrong result pass: the ps checks every result). The
// devices behind it are strangers, held to the ps's own edge rules at the
// relay's door: each frame kind's payload cap before anything is read, a
// join first and within handshake_timeout, idle_timeout, a rate limit on
// unsolicited frames, a connection cap; and at the ps's door again, since
// every device has its own connection there.
//
// Churn: a relay that dies closes its devices' connections at both ends.
// The ps's detector declares those devices dead and moves their tiles; the
// devices rejoin through another relay or the ps itself (--connect takes a
// list), as after any lost ps.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/gateway/rate_limit.hpp"
#include "actors/relay/relay_books.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "schema/fleet_member.hpp"

namespace cleave {

struct relay_options {
  // What its devices' joins tell the ps: its name (unique per job), its
  // store (--relay-memory) and its links.
  relay_seat seat;
  std::string ps_host;
  uint16_t ps_port = 0;
  transport::bulk_options upstream;          // toward the ps (TLS: a client context)
  caf::timespan handshake_timeout = std::chrono::seconds(10);
  caf::timespan idle_timeout = std::chrono::seconds(30);
  rate_limit_options rate;
  // A task parked for a block on its way (relay_books.hpp) goes on without
  // it after this long: the block never came, and the device's miss tells the ps.
  double park_seconds = 10;
  double report_seconds = 0;  // logs its counters this often (0: never)
};

// Bytes of frames through the relay, by direction, and its store's work.
struct relay_traffic {
  uint64_t from_ps = 0, to_devices = 0, from_devices = 0, to_ps = 0;
  uint64_t devices_joined = 0, devices_dropped = 0;
};

struct relay_frame {
  uint16_t kind = 0;
  uint64_t tag = 0;
  std::vector<char> payload;
};

struct relay_seat_state {
  std::string peer;
  caf::timestamp opened;
  caf::timestamp last_frame;
  bool joined = false;   // its join went up to the ps
  caf::actor upstream;   // its own connection to the ps, once open
  std::vector<relay_frame> waiting;  // frames that came before that connection
  rate_limiter limiter;
};

struct relay_state {
  relay_options opts;
  caf::actor listener;  // the devices' side
  relay_books books{0};
  std::map<uint64_t, relay_seat_state> seats;  // by the device's connection
  std::map<caf::actor_addr, uint64_t> seat_of_upstream;
  relay_traffic traffic;
  static inline const char* name = "cleave.relay";
};

using relay_listener_atom = caf::atom_constant<caf::atom("rly_lsn")>;
using relay_named_atom = caf::atom_constant<caf::atom("rly_name")>;

// Send it (relay_named_atom, name) and then (relay_listener_atom, listener)
// once its listener is up (a name may follow from the listener's port). It logs
// its counters every opts.report_seconds and when it ends.
caf::behavior relay_actor(caf::stateful_actor<relay_state>* self, relay_options opts);

// The relay's line in a log: devices, bytes each way, its store's work.
std::string describe(const relay_counters& c, const relay_traffic& t, size_t devices);

}  // namespace cleave
