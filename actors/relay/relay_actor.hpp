#pragma once
// A relay (--role=relay): an edge server, regional VM or gateway between the
// ps and its devices. Devices join the relay's edge as they would the ps's.
// The relay holds one connection to the ps's edge for all of them: it opens
// with a hello naming the relay and declaring its store and links, and
// carries each device's frames as a session of its own
// (schema/edge_relay_codec.hpp). The ps sends each operand block to the relay
// once a step and names it to the relay's other devices; the relay fills the
// values in from its store (relay_books.hpp). The ps's egress then falls from
// once per device to once per relay, and the ps holds one socket per relay.
//
// Trust: the relay is trusted like a ps shard (it could drop or delay
// frames, never make a wrong result pass: the ps checks every result). The
// devices behind it are strangers, held to the ps's own edge rules at the
// relay's door: each frame kind's payload cap before anything is read, a
// join first and within handshake_timeout, idle_timeout, a rate limit on
// unsolicited frames, a connection cap. The ps checks each device's join
// again and judges its answers as a direct device's.
//
// Churn: a relay that dies closes its devices' connections, and the ps ends
// their sessions with the relay's connection. The ps's detector declares
// those devices dead and moves their tiles; the devices rejoin through
// another relay or the ps itself (--connect takes a list). A relay that
// loses the ps closes its devices' connections and dials again.

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
  // What the relay tells the ps in its hello: its name (unique per job), its
  // store (--relay-memory) and its links.
  relay_seat seat;
  std::string ps_host;
  uint16_t ps_port = 0;
  transport::bulk_options upstream;          // toward the ps (TLS: a client context)
  caf::timespan handshake_timeout = std::chrono::seconds(10);
  caf::timespan idle_timeout = std::chrono::seconds(30);
  rate_limit_options rate;
  uint64_t max_tile_bytes = uint64_t{64} << 20;  // the largest task or result
  // Its devices' edge runs TLS. A device without a certificate gets past
  // the handshake only when the listener takes join tokens
  // (--relay-join-tokens); its join must then carry one, which the ps redeems.
  bool tls = false;
  // A task parked for a block on its way (relay_books.hpp) goes on without
  // it after this long: the block never came, and the device's miss tells the ps.
  double park_seconds = 10;
  // Its own heartbeat toward the ps, so a relay without devices is not idle there.
  caf::timespan keepalive = std::chrono::seconds(5);
  caf::timespan redial = std::chrono::seconds(1);  // after the ps was lost or not reached
  double report_seconds = 0;  // logs its counters this often (0: never)
};

// Bytes of frames through the relay, by direction, and its store's work.
struct relay_traffic {
  uint64_t from_ps = 0, to_devices = 0, from_devices = 0, to_ps = 0;
  uint64_t devices_joined = 0, devices_dropped = 0;
};

// A device at the relay's door.
struct relay_seat_state {
  std::string peer;
  caf::timestamp opened;
  caf::timestamp last_frame;
  uint32_t session = 0;  // its session toward the ps: nonzero once its join went up
  bool certified = false;  // TLS: it showed a certificate of the job's CA
  rate_limiter limiter;
};

struct relay_state {
  relay_options opts;
  caf::actor listener;  // the devices' side
  caf::actor upstream;  // the connection to the ps, once open
  uint64_t failed_dials = 0;  // in a row
  relay_books books{0};
  std::map<uint64_t, relay_seat_state> seats;  // by the device's connection
  std::map<uint32_t, uint64_t> conn_of_session;
  uint32_t last_session = 0;
  relay_traffic traffic;
  static inline const char* name = "cleave.relay";
};

using relay_listener_atom = caf::atom_constant<caf::atom("rly_lsn")>;
using relay_named_atom = caf::atom_constant<caf::atom("rly_name")>;

// Send it (relay_named_atom, name) and then (relay_listener_atom, listener)
// once its listener is up (a name may follow from the listener's port); it
// then dials the ps. It logs its counters every opts.report_seconds and when
// it ends, and ends with the reason if the ps refuses it.
caf::behavior relay_actor(caf::stateful_actor<relay_state>* self, relay_options opts);

// The relay's line in a log: devices, bytes each way, its store's work.
std::string describe(const relay_counters& c, const relay_traffic& t, size_t devices);

}  // namespace cleave
