#pragma once
// The bulk channel's byte path (internal to its broker): how one
// connection's frames meet its socket, as they are or through TLS.
//
// The frame state machine asks for "exactly n bytes" and handles them in one
// call, whatever the path. In plaintext that is CAF's receive_policy::exactly
// and the stream's read buffer. With TLS the broker reads ciphertext as it
// comes (receive_policy::at_most), the connection's tls_pipe decrypts it
// straight into a unit buffer sized to the n bytes asked for, and the state
// machine gets that buffer once it is full: the same checks in the same
// order (header validated before a payload buffer is sized, payloads above
// chunk_bytes in chunks), and memory follows the bytes a peer really sends.
// A unit buffer plays the role of CAF's read buffer: a handler may swap it
// out (zero-copy payloads) or swap a pooled buffer in.
//
// TLS work off the broker's thread: decrypting more than a record into a
// unit and sealing a large frame run on the crypto pool (tls_pipe); small
// work (headers, credit, the handshake) runs inline when the pipe is idle.
// Results come back to the broker as (tls_done_atom, conn) messages and are
// applied in order, so socket I/O and the frame state machine stay on the
// broker. Ciphertext that arrives while a decryption runs goes to that job
// (tls_pipe::arrived), so one job fills a whole payload as it streams in;
// what waits is bounded by the receive window (a peer that ignores the
// window is closed).

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/io/abstract_broker.hpp>
#include <caf/io/connection_handle.hpp>

#include "actors/transport/tls_pipe.hpp"
#include "actors/transport/tls_session.hpp"

namespace cleave::transport::detail {

using tls_done_atom = caf::atom_constant<caf::atom("bulk_tlsok")>;

struct tls_link {
  // read_bytes: ciphertext read per event (bulk_options::tls_read_bytes);
  // inbox_cap: ciphertext allowed to wait for decryption.
  tls_link(std::shared_ptr<const tls_context> ctx, const std::string& peer_host, size_t read_bytes,
           size_t inbox_cap, std::shared_ptr<crypto_pool> pool, std::function<void()> notify)
      : pipe(std::move(ctx), peer_host, std::move(pool), std::move(notify)),
        read_bytes(read_bytes),
        inbox_cap(inbox_cap) {}
  tls_pipe pipe;
  size_t read_bytes;
  size_t inbox_cap;
  std::vector<char> unit;  // plaintext being assembled, sized to `want`
  size_t want = 0;
  size_t have = 0;
  bool unit_out = false;  // a posted decryption holds `unit`
  bool retry = false;     // the last decryption filled its unit: more may be decryptable
  bool open = false;      // handshake completed and announced to the sink
  std::deque<std::vector<char>> inbox;  // ciphertext waiting for the pipe
  size_t inbox_bytes = 0;
  size_t engine_buffered = 0;  // ciphertext the pipe holds, as of its last result
  size_t arrived_bytes = 0;    // handed to a running decryption since
  std::vector<char> spare_wire;                // a drained write buffer for the next seal
  size_t frames_sealing = 0;
};

// What the TLS path reports to the state machine. Each returns false when the
// connection is gone (nothing of this path may be touched then).
struct tls_events {
  std::function<bool()> on_open;                     // handshake done, peer verified
  std::function<bool(std::vector<char>&)> on_unit;   // a full unit
  std::function<bool(payload_buffer&&)> on_sealed;   // a frame's ciphertext is in the pending buffer
};

class byte_path {
 public:
  byte_path() = default;
  byte_path(caf::io::abstract_broker* self, caf::io::connection_handle hdl, std::unique_ptr<tls_link> tls)
      : self_(self), hdl_(hdl), tls_(std::move(tls)) {}

  bool is_tls() const { return tls_ != nullptr; }
  bool handshake_done() const { return !tls_ || tls_->open; }
  // TLS work is posted to a pool (not inline on the broker).
  bool offloads() const { return tls_ && tls_->pipe.offloads(); }
  bool frame_sealing() const { return tls_ && tls_->frames_sealing > 0; }
  tls_link* tls() { return tls_.get(); }

  // Configures reading; a TLS client sends its ClientHello.
  void start();
  // The next unit the state machine wants: exactly n > 0 bytes.
  void expect(size_t n);
  // Appends bytes to send (small: headers, hello, credit). With TLS before
  // the handshake completes they are held and sent once it does.
  caf::error write(const char* data, size_t size);
  // TLS: a queued frame to seal. Sealed inline: its body comes back at once.
  // Posted: nullopt, and the body comes back through on_sealed, in order.
  std::optional<payload_buffer> seal_frame(seal_input&& in, caf::error& err);
  void flush();
  // The connection's pending-write buffer (plaintext path: frame bytes; TLS:
  // ciphertext). Its size is what the socket has not taken yet.
  std::vector<char>& pending() { return self_->wr_buf(hdl_); }

  // TLS: ciphertext arrived in CAF's read buffer (swapped for a spare, so it
  // is never copied). An error is the session's (handshake refused, corrupt
  // record, ...) or a flooding peer's: write out the session's alert with
  // send_alert() (before the handshake) and close.
  caf::error receive(std::vector<char>& ciphertext, const tls_events& ev);
  // TLS: posted work finished (a tls_done_atom message). Same contract.
  caf::error on_tls_done(const tls_events& ev);
  void send_alert();
  // A quiet moment (the broker's tick): frees spare read buffers.
  void trim();

 private:
  caf::error drive(const tls_events& ev, bool& gone);
  caf::error apply(tls_result& r, const tls_events& ev, bool& gone);
  void put_wire(std::vector<char>& wire);

  caf::io::abstract_broker* self_ = nullptr;
  caf::io::connection_handle hdl_;
  std::unique_ptr<tls_link> tls_;
};

}  // namespace cleave::transport::detail
