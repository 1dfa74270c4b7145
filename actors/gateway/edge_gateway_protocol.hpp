#pragma once
// What the edge gateway is told and answers. It is the sink of the device
// edge's listener (actors/transport/bulk_channel.hpp), so most of what it
// receives is the channel's sink vocabulary:
//   (bulk_opened_atom, channel, conn, peer)   a device connected
//   (bulk_peer_atom, conn, name, may_serve)   its certificate's name, and whether it is a server's (TLS)
//   (bulk_closed_atom, conn, reason)          its connection closed
//   (bulk_frame_atom, bulk_frame)          -> std::vector<char>: a frame; the answer returns
//                                             the buffer (and the frame's credit) to the channel
// and to the process that runs it:
//   (caf::get_atom)                        -> edge_counters
//
// The gateway stays a dynamically typed actor: the channel holds its sink as
// a caf::actor (a shard process's sink is another actor with the same
// vocabulary), and its own timers and held credits are private to it.

#include <cstdint>

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

namespace cleave {

// What the gateway has seen since it started.
struct edge_counters {
  uint64_t connections = 0;
  uint64_t admitted = 0;
  uint64_t refused = 0;            // a bad or missing join
  uint64_t handshake_timeouts = 0;
  uint64_t idle_timeouts = 0;
  uint64_t throttled_frames = 0;
  uint64_t dropped_flooding = 0;   // past the rate limit
  uint64_t dropped_misbehaving = 0;  // past the strikes, or a protocol violation
  uint64_t certificates_issued = 0;  // for join tokens
  uint64_t relays = 0;             // relay connections admitted (their devices count in admitted)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, edge_counters& x) {
  return f(caf::meta::type_name("edge_counters"), x.connections, x.admitted, x.refused,
           x.handshake_timeouts, x.idle_timeouts, x.throttled_frames, x.dropped_flooding,
           x.dropped_misbehaving, x.certificates_issued, x.relays);
}

void add_gateway_message_types(caf::actor_system_config& cfg);

}  // namespace cleave
