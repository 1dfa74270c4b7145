#pragma once
// The bulk channel's byte path (internal to its broker): how one
// connection's frames meet its socket, as they are or through TLS.
//
// The frame state machine asks for "exactly n bytes" and handles them in one
// call, whatever the path. In plaintext that is CAF's receive_policy::exactly
// and the stream's read buffer. With TLS the broker reads ciphertext as it
// comes (receive_policy::at_most), the connection's tls_session decrypts it
// straight into a unit buffer sized to the n bytes asked for, and the state
// machine gets that buffer once it is full: the same checks in the same
// order (header validated before a payload buffer is sized, payloads above
// chunk_bytes in chunks), and memory follows the bytes a peer really sends.
// A unit buffer plays the role of CAF's read buffer: a handler may swap it
// out (zero-copy payloads) or swap a pooled buffer in.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/io/abstract_broker.hpp>
#include <caf/io/connection_handle.hpp>

#include "actors/transport/tls_session.hpp"

namespace cleave::transport::detail {

struct tls_link {
  // read_bytes: ciphertext read per event (bulk_options::tls_read_bytes).
  tls_link(std::shared_ptr<const tls_context> ctx, const std::string& peer_host, size_t read_bytes)
      : session(std::move(ctx), peer_host), read_bytes(read_bytes) {}
  tls_session session;
  size_t read_bytes;
  std::vector<char> unit;  // plaintext being assembled, sized to `want`
  size_t want = 0;
  size_t have = 0;
  bool open = false;  // handshake completed and announced to the sink
};

class byte_path {
 public:
  byte_path() = default;
  byte_path(caf::io::abstract_broker* self, caf::io::connection_handle hdl, std::unique_ptr<tls_link> tls)
      : self_(self), hdl_(hdl), tls_(std::move(tls)) {}

  bool is_tls() const { return tls_ != nullptr; }
  bool handshake_done() const { return !tls_ || tls_->open; }
  tls_link* tls() { return tls_.get(); }

  // Configures reading; a TLS client sends its ClientHello.
  void start();
  // The next unit the state machine wants: exactly n > 0 bytes.
  void expect(size_t n);
  // Appends bytes to send. With TLS before the handshake completes they are
  // held and sent once it does.
  caf::error write(const char* data, size_t size);
  void flush();
  // The connection's pending-write buffer (plaintext path: frame bytes; TLS:
  // ciphertext). Its size is what the socket has not taken yet.
  std::vector<char>& pending() { return self_->wr_buf(hdl_); }

  // TLS: ciphertext arrived. Calls on_open() once when the handshake
  // completes and on_unit(buf) for each full unit; either returns false when
  // the connection is gone (nothing of this path may be touched then). An
  // error is the session's (handshake refused, corrupt record, ...): write
  // out its alert with send_alert() and close.
  caf::error receive(const std::vector<char>& ciphertext, const std::function<bool()>& on_open,
                     const std::function<bool(std::vector<char>&)>& on_unit);
  void send_alert();

 private:
  caf::io::abstract_broker* self_ = nullptr;
  caf::io::connection_handle hdl_;
  std::unique_ptr<tls_link> tls_;
};

}  // namespace cleave::transport::detail
