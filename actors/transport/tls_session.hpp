#pragma once
// One TLS endpoint over memory: ciphertext in and out as byte vectors, no
// sockets, no actors, so the bulk channel's broker (or a test) moves the bytes
// and decides when to close. OpenSSL does the protocol.
//
// Policy, fixed here rather than configurable so every node agrees:
//   - TLS 1.3 only; AES-128-GCM first (AES-NI), AES-256-GCM, ChaCha20.
//   - Both sides verify the peer's chain against the job's CA (ca.pem) and
//     the certificate's purpose: a client-only (device) certificate cannot
//     serve. A server requires a client certificate unless told otherwise.
//   - With a CRL, every peer certificate is checked against it (revoked ->
//     refused). The CRL must be signed by the CA and not expired.
//   - No session tickets or resumption: every connection proves its
//     certificate afresh, so revoking takes effect on the next connect.
//
// Errors are values: make_tls_context says which file is wrong and why;
// feed() returns the reason a handshake was refused ("certificate revoked",
// "unknown CA", "certificate expired", "no certificate", ...), after which
// the caller writes out drain() (the alert) and closes.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

// OpenSSL types, so this header does not pull in OpenSSL's.
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace cleave::transport {

struct tls_files {
  std::string cert;  // this endpoint's certificate (PEM, may hold a chain)
  std::string key;   // its private key (PEM, unencrypted)
  std::string ca;    // the job's CA certificate(s) (PEM)
  std::string crl;   // optional: the CA's revocation list (PEM)
};

enum class tls_side { server, client };

// An SSL_CTX, immutable after make_tls_context: OpenSSL allows concurrent
// SSL_new on a context nobody modifies, so one context serves every
// connection of every channel in the process.
class tls_context {
 public:
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  tls_side side() const { return side_; }
  // The subject CN of this endpoint's own certificate.
  const std::string& name() const { return name_; }
  SSL_CTX* native() const { return ctx_; }

 private:
  friend caf::expected<std::shared_ptr<const tls_context>> make_tls_context(const tls_files&, tls_side,
                                                                            bool, bool);
  tls_context(SSL_CTX* ctx, tls_side side, std::string name)
      : ctx_(ctx), side_(side), name_(std::move(name)) {}
  SSL_CTX* ctx_;
  tls_side side_;
  std::string name_;
};

// Loads and checks the files: each exists and parses, the key matches the
// certificate, the certificate is signed by `ca` and valid now (and not
// revoked, with a CRL), the CRL is the CA's. Server: requires and verifies a
// client certificate unless require_peer_cert is false (then a certificate
// is still verified when a client offers one). Client: verifies the server;
// with cert and key both empty it presents no certificate (only servers with
// require_peer_cert == false accept it). A server with peer_must_serve takes
// only clients whose certificate could serve too (the job's own servers:
// a PS shard's link to its coordinator), never a device's client-only one.
caf::expected<std::shared_ptr<const tls_context>> make_tls_context(const tls_files& files, tls_side side,
                                                                   bool require_peer_cert = true,
                                                                   bool peer_must_serve = false);

// One connection's TLS state. Not thread-safe (one broker owns it).
class tls_session {
 public:
  // peer_host (client only, optional): the name or IP address the client
  // dialled; the server's certificate must carry it in its subjectAltName.
  // Empty: any server certificate the CA signed for serving is accepted.
  explicit tls_session(std::shared_ptr<const tls_context> ctx, const std::string& peer_host = {});
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  // Ciphertext from the socket in; plaintext it yields is appended to
  // `plain`. An error (handshake refused, with the reason; a corrupt record;
  // the peer's close_notify) means close, after writing out drain().
  caf::error feed(const char* data, size_t size, std::vector<char>& plain);

  // The same in two steps, for a reader that wants plaintext straight in its
  // own buffer and only as much as it can take: push() ciphertext (drives
  // the handshake), then pull() until it returns 0 (nothing decryptable
  // left). push() borrows `data` to save a copy: it must stay valid until
  // pull() has returned 0 (by then every byte of it is consumed) or the next
  // push(), which copies what is left.
  caf::error push(const char* data, size_t size);
  caf::expected<size_t> pull(char* dst, size_t max);
  // Ends a push()'s borrow early: copies what is left of it (rarely more
  // than a record) into the session's own buffer.
  void keep_rest();

  // Plaintext to send; ciphertext to write to the socket is appended to
  // `wire`. Before the handshake completes the plaintext is held (bounded by
  // what the caller writes meanwhile) and sent as soon as it does, via
  // drain(), so a caller may write its greeting right away.
  caf::error write(const char* data, size_t size, std::vector<char>& wire);

  // Ciphertext the session wants written now (handshake records, alerts,
  // plaintext held during the handshake).
  void drain(std::vector<char>& wire);
  bool wants_write() const { return !out_.empty(); }

  bool handshake_done() const;
  // Subject CN of the verified peer certificate, empty if none.
  std::string peer_name() const;
  // Whether that certificate may act as a TLS server (a server certificate
  // of the CA, not a client-only device's: deploy/ca.sh).
  bool peer_may_serve() const;

  // For the BIO callbacks only: where ciphertext goes, where it comes from.
  std::vector<char>* sink() const { return sink_; }
  size_t take_ciphertext(char* out, size_t max);
  size_t ciphertext_buffered() const { return src_len_ + (own_.size() - own_pos_); }

 private:
  caf::error step_handshake();
  caf::error failure(int ret, const char* what);

  std::shared_ptr<const tls_context> ctx_;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;                // reads ciphertext from src_, then own_
  const char* src_ = nullptr;        // borrowed ciphertext (push)
  size_t src_len_ = 0;
  std::vector<char> own_;            // ciphertext kept across pushes (rare)
  size_t own_pos_ = 0;
  std::vector<char> out_;            // ciphertext to send, between calls
  std::vector<char>* sink_ = &out_;  // where the write BIO appends
  std::vector<char> held_;           // plaintext written before the handshake completed
  std::string refused_cn_;           // CN of a peer certificate verification refused
  friend struct tls_session_access;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace cleave::transport
