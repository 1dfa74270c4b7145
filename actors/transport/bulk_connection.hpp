#pragma once
// One connection of the bulk channel's broker (internal to the broker):
// its record, the broker's state that holds it, and the connection's write
// side (send queue under the peer's window, zero-copy swaps) and removal.
// These need nothing of the frame read state machine or of the broker's
// handlers, so they live apart from them; the read side calls into them
// (credit pumps the queue, a bad header drops the connection).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <caf/actor.hpp>
#include <caf/io/broker.hpp>
#include <caf/io/connection_handle.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/transport/bulk_channel.hpp"
#include "actors/transport/bulk_io.hpp"
#include "actors/transport/frame.hpp"

namespace cleave::transport::detail {

using clock_type = std::chrono::steady_clock;

struct outgoing {
  uint16_t kind;
  uint64_t tag;
  payload_buffer payload;
  caf::response_promise rp;
};

enum class read_state { header, hello, payload_direct, payload_chunked };

struct connection {
  uint64_t id = 0;
  caf::io::connection_handle hdl;
  std::string peer;
  read_state rd = read_state::header;
  frame_header pending;            // header of the frame being read
  std::vector<char> assembling;    // chunked payloads
  uint64_t remaining = 0;          // chunked payload bytes still to read
  bool hello_received = false;
  bool data_seen = false;           // a data frame's header passed the checks
  uint64_t peer_max_payload = 0;
  receive_window rw;
  send_window sw;
  std::deque<outgoing> queue;
  uint64_t queued_bytes = 0;
  std::deque<caf::response_promise> sealing;  // frames taken from queue, sealing on the crypto pool
  size_t at_sink = 0;  // frames delivered whose reply is pending
  byte_path io;
  clock_type::time_point last_progress;
  explicit connection(uint64_t window) : rw(window) {}
};

struct bulk_state {
  caf::actor sink;
  bulk_options opts;
  bool client = false;
  std::string closed_reason;  // client: why its one connection is gone
  uint64_t next_id = 1;
  std::unordered_map<uint64_t, connection> conns;         // by connection id
  std::unordered_map<int64_t, uint64_t> by_hdl;           // handle id -> connection id
  std::vector<std::vector<char>> pool;                    // reusable read buffers, size == capacity
  std::shared_ptr<crypto_pool> crypto;                    // TLS work off the broker; null: inline
  uint64_t pool_bytes = 0;
  // Connections refused at the cap since the last line about them: a swarm
  // past the cap is one line per refusal_log_interval, not one per socket.
  uint64_t refused_unlogged = 0;
  clock_type::time_point refusal_logged{};
  static const char* name;
};

using bulk_broker = caf::io::stateful_broker<bulk_state>;

// CAF 0.17's default multiplexer derives a connection handle's id from its
// native socket (network::conn_hdl_from_socket), so the id is the fd. Used
// only for setsockopt/shutdown while the broker owns the connection.
inline int native_fd(caf::io::connection_handle hdl) { return static_cast<int>(hdl.id()); }

connection* find_conn(bulk_broker* self, uint64_t id);

// A TLS session that cannot encrypt is broken for good: the socket is shut so
// CAF reports the close and drop() runs from the connection_closed handler,
// instead of dropping the connection in the middle of a caller's loop.
void send_bytes(connection& c, const char* data, size_t size);

void write_frame_header(connection& c, const frame_header& h);

enum class close_how { abort, tls_alert };

// Removes a connection: notify the sink, fail queued sends, close the socket
// unless the peer already did. `c` is dangling afterwards.
void drop(bulk_broker* self, connection& c, const std::string& reason, bool malformed,
          bool already_closed = false, close_how how = close_how::abort);

// Writes queued frames while the peer's window allows. A bulk_buffer frame is
// swapped into the connection's (empty) pending-write buffer instead of being
// copied; while that buffer holds data the frame waits for the write-completion
// event (data_transferred_msg), which calls pump again. pending_leaving: that
// event says the pending buffer is about to become the in-flight one, so a
// frame sealed on the crypto pool now will find it empty.
void pump(bulk_broker* self, connection& c, bool pending_leaving = false);

// A frame sealed on the crypto pool is in the pending buffer: reply to its
// send with the buffer, and send what waits behind it.
void sealed(bulk_broker* self, connection& c, payload_buffer&& body);

// Queues a frame for the connection (or fails it at once: reserved kind, no
// such connection, over the peer's cap, queue full) and pumps the queue.
caf::response_promise enqueue_send(bulk_broker* self, uint64_t conn, uint16_t kind, uint64_t tag,
                                   payload_buffer&& payload);

}  // namespace cleave::transport::detail
