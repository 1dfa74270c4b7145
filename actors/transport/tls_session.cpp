#include "actors/transport/tls_session.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "actors/transport/openssl_handles.hpp"
#include "schema/errors.hpp"

namespace cleave::transport {

namespace {

// TLS 1.3 suites; AES-128-GCM first because it is the fastest with AES-NI.
constexpr const char* ciphersuites =
  "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

// OpenSSL's error queue is per thread and outlives a call: drain it into one
// line, so a failure reports what this call hit and the next call starts clean.
std::string take_openssl_errors() {
  std::string out;
  while (auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

std::string errno_text() { return std::strerror(errno); }

// The reasons an operator reads, for the verification results that matter.
std::string verify_reason(long code) {
  switch (code) {
    case X509_V_ERR_CERT_REVOKED:
      return "certificate revoked";
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return "certificate expired";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "certificate not yet valid";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return "unknown CA";
    case X509_V_ERR_INVALID_PURPOSE:
      return "certificate not valid for this role (a device certificate cannot serve)";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return "certificate does not name the host dialled";
    case X509_V_ERR_UNABLE_TO_GET_CRL:
      return "no CRL from the certificate's issuer";
    case X509_V_ERR_CRL_HAS_EXPIRED:
      return "CRL expired";
    default:
      return X509_verify_cert_error_string(code);
  }
}

// Alerts the peer sent us: its verdict on our certificate.
const char* alert_reason(int reason) {
  switch (reason) {
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
      return "peer refused our certificate: certificate revoked";
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
      return "peer refused our certificate: certificate expired";
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
      return "peer refused our certificate: unknown CA";
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return "peer refused: no certificate";
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
      return "peer refused our certificate: not valid for this role";
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
      return "peer refused our certificate: bad certificate";
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
      return "peer refused: protocol version (TLS 1.3 required)";
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return "no certificate";
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_RECORD_LENGTH_MISMATCH:
    case SSL_R_HTTP_REQUEST:
      return "not a TLS 1.3 peer";
    default:
      return nullptr;
  }
}

std::string common_name(X509* cert) {
  if (!cert) return {};
  auto subject = X509_get_subject_name(cert);
  int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (i < 0) return {};
  auto data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

caf::error readable(const std::string& path, const char* what) {
  if (path.empty()) return fail(std::string("TLS: no ") + what + " file given");
  auto f = std::fopen(path.c_str(), "rb");
  if (!f) return fail(std::string("TLS: cannot read ") + what + " file " + path + ": " + errno_text());
  std::fclose(f);
  return caf::none;
}

// Every certificate in a PEM file (a chain or a CA bundle).
caf::expected<std::vector<x509_ptr>> read_certs(const std::string& path, const char* what) {
  auto f = std::fopen(path.c_str(), "rb");
  if (!f) return fail(std::string("TLS: cannot read ") + what + " file " + path + ": " + errno_text());
  std::vector<x509_ptr> out;
  while (auto c = PEM_read_X509(f, nullptr, nullptr, nullptr)) out.emplace_back(c);
  std::fclose(f);
  ERR_clear_error();  // the read that ends the loop fails by design
  if (out.empty()) return fail(std::string("TLS: ") + what + " file " + path + " holds no PEM certificate");
  return out;
}

caf::expected<crl_ptr> read_crl(const std::string& path) {
  auto f = std::fopen(path.c_str(), "rb");
  if (!f) return fail("TLS: cannot read CRL file " + path + ": " + errno_text());
  crl_ptr crl{PEM_read_X509_CRL(f, nullptr, nullptr, nullptr)};
  std::fclose(f);
  if (!crl) return fail("TLS: CRL file " + path + " holds no PEM CRL: " + take_openssl_errors());
  return crl;
}

// The write side of a session: OpenSSL appends records straight to the
// vector the session points it at (the socket's pending-write buffer in the
// channel), saving the copy out of a memory BIO.
int sink_write(BIO* b, const char* data, int len) {
  auto s = static_cast<tls_session*>(BIO_get_data(b));
  if (len <= 0) return 0;
  s->sink()->insert(s->sink()->end(), data, data + len);
  return len;
}

long sink_ctrl(BIO*, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
    case BIO_CTRL_WPENDING:
      return 0;
    default:
      return 0;
  }
}

int sink_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

// The read side: OpenSSL reads ciphertext in place from the bytes the
// caller pushed (the socket's read buffer in the channel), saving the copy
// into a memory BIO. Empty means "more to come" (retry), never EOF.
int source_read(BIO* b, char* out, int len) {
  auto s = static_cast<tls_session*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  auto n = s->take_ciphertext(out, len > 0 ? static_cast<size_t>(len) : 0);
  if (n == 0) {
    BIO_set_retry_read(b);
    return -1;
  }
  return static_cast<int>(n);
}

long source_ctrl(BIO* b, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_PENDING:
      return static_cast<long>(static_cast<tls_session*>(BIO_get_data(b))->ciphertext_buffered());
    case BIO_CTRL_FLUSH:
      return 1;
    default:
      return 0;
  }
}

BIO_METHOD* source_method() {
  static BIO_METHOD* m = [] {
    auto meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "cleave span source");
    BIO_meth_set_read(meth, source_read);
    BIO_meth_set_ctrl(meth, source_ctrl);
    BIO_meth_set_create(meth, sink_create);
    return meth;
  }();
  return m;
}

BIO_METHOD* sink_method() {
  static BIO_METHOD* m = [] {
    auto meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "cleave vector sink");
    BIO_meth_set_write(meth, sink_write);
    BIO_meth_set_ctrl(meth, sink_ctrl);
    BIO_meth_set_create(meth, sink_create);
    return meth;
  }();
  return m;
}

}  // namespace

// OpenSSL forgets a certificate it refused, so the verify callback notes the
// name for the error message ("certificate revoked (peer certificate 'x')").
struct tls_session_access {
  static int verify(int ok, X509_STORE_CTX* x) {
    if (ok) return ok;
    auto ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx()));
    auto s = ssl ? static_cast<tls_session*>(SSL_get_app_data(ssl)) : nullptr;
    if (s && s->refused_cn_.empty()) s->refused_cn_ = common_name(X509_STORE_CTX_get0_cert(x));
    return ok;
  }
};

tls_context::~tls_context() { SSL_CTX_free(ctx_); }

caf::expected<std::shared_ptr<const tls_context>> make_tls_context(const tls_files& files, tls_side side,
                                                                   bool require_peer_cert, bool peer_must_serve) {
  ERR_clear_error();
  // A client may go without a certificate (for servers that do not require
  // one): both cert and key empty.
  bool anonymous = side == tls_side::client && files.cert.empty() && files.key.empty();
  if (!anonymous) {
    if (auto err = readable(files.cert, "certificate")) return err;
    if (auto err = readable(files.key, "private key")) return err;
  }
  if (auto err = readable(files.ca, "CA")) return err;
  if (!files.crl.empty())
    if (auto err = readable(files.crl, "CRL")) return err;

  ctx_ptr ctx{SSL_CTX_new(side == tls_side::server ? TLS_server_method() : TLS_client_method())};
  if (!ctx) return fail("TLS: cannot create a context: " + take_openssl_errors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  if (SSL_CTX_set_ciphersuites(ctx.get(), ciphersuites) != 1)
    return fail("TLS: cipher suites refused: " + take_openssl_errors());
  // Every connection presents and verifies its certificate; nothing to resume.
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  if (side == tls_side::server) SSL_CTX_set_num_tickets(ctx.get(), 0);

  std::vector<x509_ptr> chain;
  if (!anonymous) {
    auto certs = read_certs(files.cert, "certificate");
    if (!certs) return certs.error();
    chain = std::move(*certs);
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1)
      return fail("TLS: cannot use certificate " + files.cert + ": " + take_openssl_errors());
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
      if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
        ERR_clear_error();
        return fail("TLS: private key " + files.key + " does not match certificate " + files.cert);
      }
      return fail("TLS: cannot load private key " + files.key + ": " + take_openssl_errors());
    }
    if (SSL_CTX_check_private_key(ctx.get()) != 1) {
      ERR_clear_error();
      return fail("TLS: private key " + files.key + " does not match certificate " + files.cert);
    }
  }

  auto cas = read_certs(files.ca, "CA");
  if (!cas) return cas.error();
  if (SSL_CTX_load_verify_locations(ctx.get(), files.ca.c_str(), nullptr) != 1)
    return fail("TLS: cannot load CA file " + files.ca + ": " + take_openssl_errors());
  auto store = SSL_CTX_get_cert_store(ctx.get());

  if (!files.crl.empty()) {
    auto crl = read_crl(files.crl);
    if (!crl) return crl.error();
    // A CRL from another CA would be ignored by verification and leave
    // revoked devices in; an expired one would refuse every peer. Say so now.
    bool signed_by_ca = false;
    for (auto& ca : *cas)
      if (X509_NAME_cmp(X509_CRL_get_issuer(crl->get()), X509_get_subject_name(ca.get())) == 0 &&
          X509_CRL_verify(crl->get(), X509_get0_pubkey(ca.get())) == 1)
        signed_by_ca = true;
    ERR_clear_error();
    if (!signed_by_ca) return fail("TLS: CRL " + files.crl + " is not signed by the CA in " + files.ca);
    auto next = X509_CRL_get0_nextUpdate(crl->get());
    if (next && X509_cmp_current_time(next) <= 0)
      return fail("TLS: CRL " + files.crl + " has expired; regenerate it (deploy/ca.sh crl DIR)");
    if (X509_STORE_add_crl(store, crl->get()) != 1)
      return fail("TLS: cannot use CRL " + files.crl + ": " + take_openssl_errors());
    X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
  }

  // Our own certificate must pass the check our peers will make, so a wrong
  // file fails here with its reason instead of as a refused handshake later.
  if (!anonymous) {
    store_ctx_ptr sctx{X509_STORE_CTX_new()};
    STACK_OF(X509)* extra = nullptr;
    SSL_CTX_get0_chain_certs(ctx.get(), &extra);
    if (!sctx || X509_STORE_CTX_init(sctx.get(), store, chain.front().get(), extra) != 1)
      return fail("TLS: cannot check certificate " + files.cert + ": " + take_openssl_errors());
    X509_STORE_CTX_set_purpose(sctx.get(), side == tls_side::server ? X509_PURPOSE_SSL_SERVER
                                                                    : X509_PURPOSE_SSL_CLIENT);
    if (X509_verify_cert(sctx.get()) != 1) {
      auto code = X509_STORE_CTX_get_error(sctx.get());
      ERR_clear_error();
      if (code == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
          code == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT || code == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
          code == X509_V_ERR_CERT_SIGNATURE_FAILURE)
        return fail("TLS: certificate " + files.cert + " is not signed by the CA in " + files.ca);
      return fail("TLS: certificate " + files.cert + " fails verification against " + files.ca + ": " +
                  verify_reason(code));
    }
  }

  int mode = SSL_VERIFY_PEER;
  if (side == tls_side::server) {
    if (require_peer_cert) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    // The peer's chain is checked for this purpose instead of a client's.
    if (peer_must_serve && X509_VERIFY_PARAM_set_purpose(SSL_CTX_get0_param(ctx.get()), X509_PURPOSE_SSL_SERVER) != 1)
      return fail("TLS: cannot require a server certificate of peers: " + take_openssl_errors());
    // Tell clients which CA we accept (they may hold several certificates).
    if (auto names = SSL_load_client_CA_file(files.ca.c_str())) SSL_CTX_set_client_CA_list(ctx.get(), names);
  }
  SSL_CTX_set_verify(ctx.get(), mode, tls_session_access::verify);
  SSL_CTX_set_verify_depth(ctx.get(), 4);
  ERR_clear_error();
  auto name = anonymous ? std::string{} : common_name(chain.front().get());
  return std::shared_ptr<const tls_context>(new tls_context(ctx.release(), side, std::move(name)));
}

tls_session::tls_session(std::shared_ptr<const tls_context> ctx, const std::string& peer_host)
    : ctx_(std::move(ctx)) {
  ERR_clear_error();
  if (!ctx_ || !(ssl_ = SSL_new(ctx_->native()))) {
    failed_ = true;
    return;
  }
  in_ = BIO_new(source_method());
  auto out = BIO_new(sink_method());
  if (!in_ || !out) {
    BIO_free(in_);
    BIO_free(out);
    in_ = nullptr;
    failed_ = true;
    return;
  }
  SSL_set_app_data(ssl_, this);
  BIO_set_data(in_, this);
  BIO_set_data(out, this);
  SSL_set_bio(ssl_, in_, out);  // ssl_ owns both now
  if (ctx_->side() == tls_side::server) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  if (!peer_host.empty()) {
    unsigned char addr[16];
    bool is_ip = inet_pton(AF_INET, peer_host.c_str(), addr) == 1 ||
                 inet_pton(AF_INET6, peer_host.c_str(), addr) == 1;
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), peer_host.c_str());
    } else {
      SSL_set1_host(ssl_, peer_host.c_str());
      SSL_set_tlsext_host_name(ssl_, peer_host.c_str());
    }
  }
  // The ClientHello, ready for drain().
  if (auto err = step_handshake()) failed_ = true;
}

tls_session::~tls_session() { SSL_free(ssl_); }

bool tls_session::handshake_done() const { return done_; }

std::string tls_session::peer_name() const {
  if (!done_ || !ssl_ || SSL_get_verify_result(ssl_) != X509_V_OK) return {};
  return common_name(SSL_get0_peer_certificate(ssl_));
}

bool tls_session::peer_may_serve() const {
  if (!done_ || !ssl_ || SSL_get_verify_result(ssl_) != X509_V_OK) return false;
  auto cert = SSL_get0_peer_certificate(ssl_);
  return cert != nullptr && X509_check_purpose(cert, X509_PURPOSE_SSL_SERVER, 0) == 1;
}

caf::error tls_session::failure(int ret, const char* what) {
  failed_ = true;
  int code = SSL_get_error(ssl_, ret);
  if (code == SSL_ERROR_ZERO_RETURN) {
    ERR_clear_error();
    return fail("TLS: peer closed the session");
  }
  std::string prefix = done_ ? "TLS: " : "TLS handshake refused: ";
  // Our verdict on the peer's certificate comes first: it is the reason.
  auto verdict = SSL_get_verify_result(ssl_);
  if (verdict != X509_V_OK) {
    ERR_clear_error();
    auto cn = refused_cn_;
    return fail(prefix + verify_reason(verdict) + " (peer certificate " +
                (cn.empty() ? std::string("without CN") : "'" + cn + "'") + ")");
  }
  const char* reason = nullptr;
  std::string detail;
  while (auto e = ERR_get_error()) {
    if (!reason && ERR_GET_LIB(e) == ERR_LIB_SSL) reason = alert_reason(ERR_GET_REASON(e));
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    detail += detail.empty() ? buf : std::string("; ") + buf;
  }
  if (detail.empty()) detail = code == SSL_ERROR_SYSCALL ? "connection ended" : "no detail from OpenSSL";
  if (reason) return fail(prefix + reason + " [" + detail + "]");
  return fail(prefix + what + " failed [" + detail + "]");
}

caf::error tls_session::step_handshake() {
  if (done_) return caf::none;
  int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    done_ = true;
    if (!held_.empty()) {
      auto held = std::move(held_);
      held_.clear();
      std::vector<char> tmp;
      if (auto err = write(held.data(), held.size(), tmp)) return err;
      // write() drained out_ first, so the order is handshake, then held data.
      out_.insert(out_.end(), tmp.begin(), tmp.end());
    }
    return caf::none;
  }
  auto code = SSL_get_error(ssl_, ret);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return caf::none;
  return failure(ret, "handshake");
}

size_t tls_session::take_ciphertext(char* out, size_t max) {
  if (own_pos_ < own_.size()) {
    auto n = std::min(max, own_.size() - own_pos_);
    std::memcpy(out, own_.data() + own_pos_, n);
    own_pos_ += n;
    if (own_pos_ == own_.size()) {
      own_.clear();
      own_pos_ = 0;
    }
    return n;
  }
  auto n = std::min(max, src_len_);
  if (n > 0) std::memcpy(out, src_, n);
  src_ += n;
  src_len_ -= n;
  return n;
}

caf::error tls_session::push(const char* data, size_t size) {
  if (failed_) return fail("TLS: session already failed");
  ERR_clear_error();
  if (src_len_ > 0 || own_pos_ < own_.size()) {
    // Pushed again before everything was pulled: keep the rest, and the new
    // bytes behind it, in our own buffer (the channel never does this).
    own_.erase(own_.begin(), own_.begin() + static_cast<std::ptrdiff_t>(own_pos_));
    own_pos_ = 0;
    own_.insert(own_.end(), src_, src_ + src_len_);
    own_.insert(own_.end(), data, data + size);
    src_ = nullptr;
    src_len_ = 0;
  } else {
    src_ = data;
    src_len_ = size;
  }
  return step_handshake();
}

void tls_session::keep_rest() {
  if (src_len_ == 0) return;
  own_.erase(own_.begin(), own_.begin() + static_cast<std::ptrdiff_t>(own_pos_));
  own_pos_ = 0;
  own_.insert(own_.end(), src_, src_ + src_len_);
  src_ = nullptr;
  src_len_ = 0;
}

caf::expected<size_t> tls_session::pull(char* dst, size_t max) {
  if (failed_) return fail("TLS: session already failed");
  if (!done_ || max == 0) return size_t{0};
  ERR_clear_error();
  int ret = SSL_read(ssl_, dst, static_cast<int>(std::min<size_t>(max, INT_MAX)));
  if (ret > 0) return static_cast<size_t>(ret);
  auto code = SSL_get_error(ssl_, ret);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return size_t{0};
  return failure(ret, "read");
}

caf::error tls_session::feed(const char* data, size_t size, std::vector<char>& plain) {
  if (auto err = push(data, size)) return err;
  for (;;) {
    // Plaintext is at most the ciphertext buffered (plus one partial record).
    auto old = plain.size();
    auto room = std::max<size_t>(ciphertext_buffered(), 16384) + 16384;
    plain.resize(old + room);
    auto n = pull(plain.data() + old, room);
    if (!n) {
      plain.resize(old);
      return n.error();
    }
    plain.resize(old + *n);
    if (*n == 0) return caf::none;
  }
}

caf::error tls_session::write(const char* data, size_t size, std::vector<char>& wire) {
  if (failed_) return fail("TLS: session already failed");
  if (!done_) {
    held_.insert(held_.end(), data, data + size);
    return caf::none;
  }
  drain(wire);  // earlier records go first
  ERR_clear_error();
  // One growth step for the whole write instead of many while records append.
  auto need = wire.size() + size + (size / 16384 + 1) * 32;
  if (wire.capacity() < need) wire.reserve(std::max(need, wire.capacity() * 2));
  sink_ = &wire;
  while (size > 0) {
    int chunk = static_cast<int>(std::min<size_t>(size, size_t{1} << 30));
    int ret = SSL_write(ssl_, data, chunk);
    if (ret <= 0) {
      sink_ = &out_;
      return failure(ret, "write");
    }
    data += ret;
    size -= static_cast<size_t>(ret);
  }
  sink_ = &out_;
  return caf::none;
}

void tls_session::drain(std::vector<char>& wire) {
  if (out_.empty()) return;
  if (wire.empty())
    wire.swap(out_);
  else
    wire.insert(wire.end(), out_.begin(), out_.end());
  out_.clear();
}

}  // namespace cleave::transport
