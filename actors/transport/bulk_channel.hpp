#pragma once
// Bulk tensor transport: length-capped frames (frame.hpp) through a CAF
// io::broker that the project owns. BASP moves std::vector<float> at a few
// percent of raw TCP; a broker reading frames with receive_policy::exactly
// runs near raw TCP. It carries everything a device says (actors/gateway: the
// device edge); BASP stays between server-side nodes.
//
// Every port is hostile. Per connection, the broker reads the 24-byte header,
// validates it (magic, version, length <= max_payload, receive window) and only
// then configures the payload read. A malformed frame, a protocol violation or
// a stalled peer closes that connection with a log line; the broker and the
// node keep running.
//
// Messages a sink receives:
//   (bulk_opened_atom, caf::actor channel, uint64_t conn, std::string peer)
//       a connection is up (peer = "addr:port"). With TLS (bulk_options::tls)
//       only once its handshake has completed and the peer's certificate is
//       verified; a connection refused at the handshake is never opened (the
//       sink sees only its bulk_closed, with the reason).
//   (bulk_peer_atom, uint64_t conn, std::string name, bool may_serve)
//       TLS only, right after bulk_opened: the subject CN of the peer's
//       verified certificate (empty if the peer presented none, which only a
//       listener with require_peer_cert == false admits), and whether it may
//       act as a TLS server (a server certificate, not a client-only one).
//       Sinks of TLS channels must handle it.
//   (bulk_frame_atom, bulk_frame)   sent as a request
//       one frame. The payload arrives zero-copy (the broker's read buffer is
//       moved into the message). The sink's reply returns window credit to
//       the sender: reply when done with the frame (a handler returning void
//       replies at once; a response promise delays the credit = backpressure).
//       Replying with the payload std::vector<char> hands the buffer back to
//       the broker for reuse in a later read (optional, saves an allocation).
//   (bulk_closed_atom, uint64_t conn, std::string reason)
//       the connection is gone (peer closed, malformed frame, stall, ...).
//
// Messages a channel accepts. A send replies with a buffer of the payload's
// type once the frame is in the socket's write buffer, or with an error. Use
// request() and keep a few sends in flight: the reply is the backpressure.
//   (bulk_send_atom, uint64_t conn, uint16_t kind, uint64_t tag, P)
//   client channels only, to their single connection:
//   (bulk_send_atom, uint16_t kind, uint64_t tag, P)
// with payload P one of
//   bulk_buffer          zero-copy: handed to the socket as is (fastest path)
//   std::vector<char>    copied once into the write buffer, returned as is
//   std::vector<float>   likewise (raw bytes)
// and
//   (bulk_closed_atom, uint64_t conn)   close one connection
// Argument types must match exactly (uint16_t kind, uint64_t tag and conn).
// Channels quit on an exit message or when their sink terminates. A client
// channel whose connection closed stays up and fails every send with the
// reason, so a request never waits on a dead broker (CAF 0.17 brokers do not
// bounce requests once terminated: abstract_broker::cleanup skips the
// mailbox close of scheduled_actor::cleanup). Exit it when reconnecting. A vector<float> payload travels as
// its raw bytes (host byte order; every Cleave node is little-endian x86-64/ARM).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include "actors/transport/frame.hpp"
#include "actors/transport/tls_session.hpp"

namespace cleave::transport {

using bulk_frame_atom = caf::atom_constant<caf::atom("bulk_frame")>;
using bulk_send_atom = caf::atom_constant<caf::atom("bulk_send")>;
using bulk_opened_atom = caf::atom_constant<caf::atom("bulk_open")>;
using bulk_closed_atom = caf::atom_constant<caf::atom("bulk_close")>;
using bulk_peer_atom = caf::atom_constant<caf::atom("bulk_peer")>;

struct bulk_frame {
  uint16_t kind = 0;
  uint64_t tag = 0;
  uint64_t conn = 0;  // connection id within the channel that received it
  std::vector<char> payload;
  // When the broker had the whole frame (steady clock, ns since its epoch):
  // how long the frame then waited in this process is now minus this.
  int64_t received_ns = 0;

  // The payload as floats (malloc'd buffers are suitably aligned). Sizes that
  // are not a multiple of 4 have no float view: float_count() == 0.
  const float* floats() const { return reinterpret_cast<const float*>(payload.data()); }
  float* floats() { return reinterpret_cast<float*>(payload.data()); }
  size_t float_count() const { return payload.size() % sizeof(float) == 0 ? payload.size() / sizeof(float) : 0; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_frame& x) {
  return f(caf::meta::type_name("cleave::bulk_frame"), x.kind, x.tag, x.conn, x.payload,
           x.received_ns);
}

// A send buffer with room for the frame header in front of the payload. The
// channel writes the header in place and swaps the whole vector into the
// socket's write buffer: the payload is never copied in user space. Build the
// tensor in payload() / floats(), send it, and reuse the buffer that comes back
// in the reply (same capacity class, already drained to the socket).
class bulk_buffer {
 public:
  bulk_buffer() = default;
  explicit bulk_buffer(size_t payload_bytes) : bytes_(frame_header_size + payload_bytes) {}
  // Payload size in bytes; growing zero-fills the new bytes.
  void resize(size_t payload_bytes) { bytes_.resize(frame_header_size + payload_bytes); }
  size_t size() const { return bytes_.size() > frame_header_size ? bytes_.size() - frame_header_size : 0; }
  size_t capacity() const {
    return bytes_.capacity() > frame_header_size ? bytes_.capacity() - frame_header_size : 0;
  }
  char* payload() { return bytes_.data() + frame_header_size; }
  const char* payload() const { return bytes_.data() + frame_header_size; }
  // bytes_ comes from operator new: 16-byte aligned, so +24 is float-aligned.
  float* floats() { return reinterpret_cast<float*>(payload()); }
  const float* floats() const { return reinterpret_cast<const float*>(payload()); }
  // Header room + payload; the channel's business.
  std::vector<char>& storage() { return bytes_; }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, bulk_buffer& x) {
    return f(caf::meta::type_name("cleave::bulk_buffer"), x.bytes_);
  }

 private:
  std::vector<char> bytes_;
};

inline constexpr uint64_t min_tls_read_bytes = 4096;

struct bulk_options {
  // Largest payload accepted from a peer; larger headers close the connection
  // before anything is allocated. Advertised to the peer, whose sends over it
  // fail locally instead.
  uint64_t max_payload = default_max_payload;
  // Tighter caps per data kind (empty: only max_payload applies). A header's
  // length is checked against min(max_payload, max_payload_for_kind(kind))
  // before any read is configured, so a kind that only ever carries small
  // frames cannot be used to make the receiver buffer max_payload bytes. Over
  // the cap closes the connection with a reason naming kind and cap. Not
  // advertised to the peer (hello carries max_payload only), and never called
  // for the channel's control kinds (>= first_reserved_kind). Called on the
  // broker's thread: keep it cheap and non-blocking.
  std::function<uint64_t(uint16_t kind)> max_payload_for_kind;
  // Not empty: a connection's first data frame must be of one of these
  // kinds (the device edge's join or a relay's hello), so a peer nobody
  // admitted yet can send only those kinds' few bytes.
  std::vector<uint16_t> first_data_kinds;
  // Receive window advertised to the peer (bytes of payload + 4 KiB per frame
  // delivered to the sink and not yet replied to).
  uint64_t receive_window = uint64_t{64} << 20;
  // Payloads up to this size are read in place into one buffer that is handed
  // to the sink (zero-copy). Larger ones are read in chunks of this size and
  // appended (one memcpy), so memory follows the bytes a peer actually sends,
  // not what its header claims. A forged header pins at most chunk_bytes per
  // connection until stall_timeout: hostile peers can hold at most
  // max_connections * chunk_bytes this way.
  uint64_t chunk_bytes = uint64_t{8} << 20;
  // TLS: ciphertext read per socket event. CAF sizes each connection's read
  // buffer to it, idle or not, so it is per-connection memory: large enough
  // that a fast peer costs few broker messages; a listener for thousands of
  // small peers takes less (edge_channel_options).
  uint64_t tls_read_bytes = uint64_t{256} << 10;
  // TLS: where decryption and encryption of frames run, so they do not all
  // serialise on CAF's single multiplexer thread with the sockets' I/O.
  // -1: the process's shared crypto pool (min(2, hardware threads) threads,
  // made on first use); n > 0: a pool of n threads for this channel alone;
  // 0: inline on the broker, as before the pool. Headers, credit and the
  // handshake run inline whenever the connection has no work on the pool.
  int tls_threads = -1;
  // Credit for consumed frames is returned as soon as the sink is idle, one
  // credit frame per frame a quiet peer sends. Nonzero: while the sink is
  // idle, up to this many bytes of credit are held back and returned with a
  // later frame's, so a peer that only heartbeats costs no write per
  // heartbeat. Needs receive_window >= frame_cost(max_payload) + this, so
  // the credit held back never blocks the peer's largest frame.
  uint64_t lazy_credit_bytes = 0;
  // Bytes a channel queues per connection beyond the window before bulk_send
  // fails with "send queue full".
  uint64_t max_send_queue = uint64_t{256} << 20;
  // Listener: connections beyond this are closed on accept.
  size_t max_connections = 256;
  // A connection that has not completed its hello, or is inside a frame, and
  // completed no read (header, chunk or payload) for this long is closed.
  // Must exceed chunk_bytes / the slowest peer's uplink. Zero disables.
  caf::timespan stall_timeout = std::chrono::seconds(60);
  // connect_bulk gives up on a peer that does not accept within this long.
  caf::timespan connect_timeout = std::chrono::seconds(10);
  // SO_SNDBUF / SO_RCVBUF for the channel's sockets; 0 keeps kernel autotuning.
  int socket_buffer_bytes = 0;
  // Listener: bind address (empty = all interfaces) and SO_REUSEADDR.
  std::string bind_address;
  bool reuse_address = true;
  // Bytes of read buffers kept for reuse (sinks that reply with their payload
  // hand it back). The window bounds what is out at the sink, so a pool of
  // one window lets a steady stream run without allocating. 0 disables.
  uint64_t pool_bytes = uint64_t{64} << 20;
  // TLS for every connection of the channel (null: plaintext). A listener
  // needs a server context (make_tls_context(..., tls_side::server)), a
  // client a client context; connect_bulk verifies that the server's
  // certificate names the host it dials (deploy/ca.sh issue ... server
  // --san NAME). Frames, their checks and caps are the same inside TLS; the
  // handshake must complete within stall_timeout of the TCP connect, and a
  // peer that fails it is closed with the reason ("certificate revoked",
  // "unknown CA", "no certificate", ...) in the log and in bulk_closed.
  std::shared_ptr<const tls_context> tls;
};

// Registers bulk_frame (and std::vector<float>) with CAF; call on the config
// of every actor system that uses the channel.
void add_transport_message_types(caf::actor_system_config& cfg);

struct bulk_listener {
  caf::actor channel;  // the broker: send replies through it, exit it to stop
  uint16_t port = 0;
};

// Listens on `port` (0: ephemeral) and delivers every connection's frames to
// `sink`. The actor system must have the io middleman loaded.
caf::expected<bulk_listener> spawn_bulk_listener(caf::actor_system& sys, uint16_t port,
                                                 caf::actor sink, bulk_options opts = {});

// Same, returning only the bound port.
caf::expected<uint16_t> open_bulk_listener(caf::actor_system& sys, uint16_t port, caf::actor sink,
                                           bulk_options opts = {});

// Connects to a listener (blocking for the TCP connect) and returns the
// channel actor; frames from the peer go to `sink`.
caf::expected<caf::actor> connect_bulk(caf::actor_system& sys, const std::string& host,
                                       uint16_t port, caf::actor sink, bulk_options opts = {});

}  // namespace cleave::transport
