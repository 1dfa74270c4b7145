#pragma once
// The server side of the device edge: the only door devices have. It owns the
// edge listener (actors/transport: capped frames through a broker the
// project owns; devices never reach a BASP port), admits a connection when
// its first frame is a valid join, and spawns a device_proxy that stands for
// the device before the planner, the detector and the PS engines. Those
// actors keep their interfaces: to them a remote device is an actor like any
// other.
//
// What the gateway enforces, per connection:
//   - every frame's payload is capped by its kind before it is read
//     (edge_payload_cap, applied by the channel);
//   - a join within handshake_timeout of connecting, else it is closed;
//   - an admitted device that sends nothing for idle_timeout is closed;
//   - a rate limit (rate_limit.hpp) on the frames a device sends of its own
//     accord (heartbeats and whatever else is not an answer to a task): past
//     its burst its credit is held back, so its sends block; far past its
//     rate it is dropped. Answers are bounded by the tasks its proxy issued;
//   - frames its proxy refuses are strikes, and too many drop it.
// Every drop is logged with its reason and counted (edge_counters).
//
// A relay (actors/relay) holds one connection for all its devices: its first
// frame is a hello naming it (under TLS, the name in its certificate), and
// every frame after is one of its devices' (schema/edge_relay_codec.hpp). Each
// device is a session of that connection with a proxy of its own, admitted
// by its join as a direct device is; it ends with a leave from the relay, or
// the gateway sends the relay an edge_closed with the reason. A relay is
// trusted like a PS shard: its devices met the rate limit and the caps at the
// relay's own door, so their frames are not rate-limited again here; idle
// sessions, refused frames and quarantines are handled as for direct devices
// (relay_sessions.hpp; what both kinds of door share: edge_admission.hpp).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <memory>
#include <optional>

#include "actors/gateway/device_proxy.hpp"
#include "actors/gateway/edge_gateway_protocol.hpp"
#include "actors/gateway/join_tokens.hpp"
#include "actors/gateway/rate_limit.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "actors/transport/certificates.hpp"

namespace cleave {

struct edge_options {
  std::function<caf::actor()> planner;  // the current planner (it may restart)
  double heartbeat_seconds = 0.1;
  caf::timespan handshake_timeout = std::chrono::seconds(10);
  caf::timespan idle_timeout = std::chrono::seconds(30);
  rate_limit_options rate;  // for frames that answer no task
  uint32_t max_strikes = 64;
  // The largest task or result frame. A device can make the channel hold at
  // most one frame being read per connection, so this bounds what an
  // admitted device can pin; nobody else gets past the join's few hundred
  // bytes.
  uint64_t max_tile_bytes = uint64_t{64} << 20;
  // Connections the edge holds open at once (devices, relays, and peers that
  // have not joined yet); more are closed on accept (--max-devices). It also
  // caps the devices admitted, on their own connections and behind relays
  // together: the heartbeat interval the welcome gives is sized for that many.
  size_t max_connections = 256;
  // Large frames are read in pieces of this size, so a header that claims
  // much and sends little pins at most this much per connection (the
  // channel's max_connections of them at most). 0: edge_read_chunk_bytes.
  uint64_t read_chunk_bytes = 0;
  // With TLS: a device without a certificate may join once with one of
  // these tokens, and is sent a certificate `issuer` signs for its request.
  std::optional<join_tokens> tokens;
  std::shared_ptr<const transport::certificate_issuer> issuer;
  int certificate_days = 365;
  // A coordinator over shard processes: the shards' device edges and the
  // proof (job_proof.hpp) of a device id, both sent in each welcome.
  std::vector<std::string> shard_edges;
  std::function<std::string(int32_t)> prove;
  // A shard's edge: a join it refuses (the reason) never reaches the planner.
  std::function<caf::error(const edge_join_msg&)> admit_join;
};

// A device behind a relay, on the relay's connection.
struct relay_session {
  caf::actor proxy;
  caf::timestamp last_frame;
};

struct edge_connection {
  std::string peer;
  caf::timestamp opened;
  caf::timestamp last_frame;
  caf::actor proxy;  // a device's: null until the join frame
  rate_limiter limiter;
  bool certified = false;  // TLS: it presented a certificate the CA signed
  std::string certificate_name;  // ... and the name in it
  bool certificate_serves = false;  // ... a server certificate, as a relay's must be
  relay_seat relay;  // a relay's: set by its hello
  std::map<uint32_t, relay_session> sessions;  // a relay's devices
  bool admitted() const { return proxy || !relay.empty(); }
};

// Whom a proxy speaks for: a connection, or a session of a relay's.
struct proxy_seat {
  uint64_t conn = 0;
  uint32_t session = 0;  // 0: the connection is the device's own
};

// A frame's credit held back from a throttled device.
struct held_credit {
  caf::typed_response_promise<std::vector<char>> rp;
  std::vector<char> payload;
};

using credit_atom = caf::atom_constant<caf::atom("credit")>;

struct edge_gateway_state {
  edge_options opts;
  caf::actor channel;
  std::map<uint64_t, edge_connection> conns;
  std::map<caf::actor_addr, proxy_seat> seat_of_proxy;
  edge_counters counters;
  std::map<uint64_t, held_credit> held;
  uint64_t next_held = 0;
  static inline const char* name = "cleave.edge_gateway";
};

// Messages: edge_gateway_protocol.hpp.
caf::behavior edge_gateway(caf::stateful_actor<edge_gateway_state>* self, edge_options opts);

// The channel options the edge needs: the per-kind caps, the connection cap
// and each connection's buffers.
transport::bulk_options edge_channel_options(const edge_options& opts, transport::bulk_options base = {});

// Per-connection read memory follows the cap, so a full edge of forged
// headers pins at most edge_read_budget_bytes: 1 MiB each at the default
// 256 connections, down to 64 KiB each (5,000 connections: 320 MiB), which
// only costs big frames more socket events. TLS reads ciphertext in pieces
// of the same size, at most 256 KiB. An idle plaintext connection holds a
// header's 24 bytes of read buffer; a TLS one a piece of ciphertext and its
// OpenSSL session (docs/EDGE.md, "At scale").
inline constexpr uint64_t edge_read_budget_bytes = uint64_t{256} << 20;
uint64_t edge_read_chunk_bytes(size_t max_connections);
// Credit an idle edge holds back per connection (bulk_options::lazy_credit_bytes):
// a device that only heartbeats gets one credit frame per 256 heartbeats.
inline constexpr uint64_t edge_lazy_credit_bytes = uint64_t{1} << 20;

}  // namespace cleave
