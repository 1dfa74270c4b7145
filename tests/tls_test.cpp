// tls_session on its own: two endpoints wired back to back in memory, with
// certificates made at test time by deploy/ca.sh (so the script is tested
// too). Every refusal must carry its reason.

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "actors/transport/tls_session.hpp"
#include "schema/errors.hpp"
#include "tests/tls_fixture.hpp"

using namespace cleave;
using namespace cleave::transport;
using cleave::testing::test_pki;

namespace {

const test_pki& pki() {
  static test_pki p;
  return p;
}

std::shared_ptr<const tls_context> ctx_or_die(const tls_files& f, tls_side side, bool require = true) {
  auto c = make_tls_context(f, side, require);
  EXPECT_TRUE(c) << (c ? "" : describe(c.error()));
  return c ? *c : nullptr;
}

// Moves ciphertext between the two sessions in pieces of `step` bytes until
// neither has anything to say; plaintext each side receives is collected.
struct wire_pair {
  tls_session& client;
  tls_session& server;
  std::vector<char> at_client, at_server;  // plaintext received
  caf::error client_err, server_err;
  size_t step = 1 << 20;
  wire_pair(tls_session& c, tls_session& s) : client(c), server(s) {}

  void run() {
    for (int round = 0; round < 100; ++round) {
      std::vector<char> c2s, s2c;
      client.drain(c2s);
      server.drain(s2c);
      if (c2s.empty() && s2c.empty()) return;
      for (size_t i = 0; i < c2s.size() && !server_err; i += step)
        server_err = server.feed(c2s.data() + i, std::min(step, c2s.size() - i), at_server);
      for (size_t i = 0; i < s2c.size() && !client_err; i += step)
        client_err = client.feed(s2c.data() + i, std::min(step, s2c.size() - i), at_client);
      if (server_err || client_err) {
        // One more exchange delivers the alert to the other side.
        std::vector<char> a, b;
        client.drain(a);
        server.drain(b);
        if (!a.empty() && !server_err) server_err = server.feed(a.data(), a.size(), at_server);
        if (!b.empty() && !client_err) client_err = client.feed(b.data(), b.size(), at_client);
        return;
      }
    }
  }
};

std::vector<char> pattern(size_t n, unsigned seed) {
  std::vector<char> v(n);
  std::mt19937 rng(seed);
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

// A client built straight on OpenSSL, for certificates make_tls_context
// rightly refuses to load (an expired one): the server must refuse it too.
struct raw_openssl_client {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  BIO* in = nullptr;
  BIO* out = nullptr;
  raw_openssl_client(const std::string& cert, const std::string& key, const std::string& ca) {
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    EXPECT_EQ(SSL_CTX_use_certificate_file(ctx, cert.c_str(), SSL_FILETYPE_PEM), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM), 1);
    SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr);
    ssl = SSL_new(ctx);
    in = BIO_new(BIO_s_mem());
    out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_connect_state(ssl);
    SSL_do_handshake(ssl);
  }
  ~raw_openssl_client() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  std::vector<char> take() {
    std::vector<char> v(BIO_ctrl_pending(out));
    if (!v.empty()) BIO_read(out, v.data(), static_cast<int>(v.size()));
    return v;
  }
  void give(const std::vector<char>& v) {
    BIO_write(in, v.data(), static_cast<int>(v.size()));
    SSL_do_handshake(ssl);
    ERR_clear_error();
  }
};

// Runs a handshake between a raw client and a tls_session server; returns
// the server's error.
caf::error raw_handshake(raw_openssl_client& c, tls_session& server) {
  std::vector<char> plain;
  for (int round = 0; round < 20; ++round) {
    auto bytes = c.take();
    if (bytes.empty()) break;
    if (auto err = server.feed(bytes.data(), bytes.size(), plain)) return err;
    std::vector<char> back;
    server.drain(back);
    c.give(back);
  }
  return caf::none;
}

// ------------------------------------------------------------ contexts

TEST(TlsContext, LoadsTheFilesCaShIssues) {
  auto s = make_tls_context(pki().server_files(), tls_side::server);
  ASSERT_TRUE(s) << describe(s.error());
  EXPECT_EQ((*s)->name(), "ps");
  auto c = make_tls_context(pki().device_files("dev1"), tls_side::client);
  ASSERT_TRUE(c) << describe(c.error());
  EXPECT_EQ((*c)->name(), "dev1");
}

TEST(TlsContext, FileErrorsSayWhatIsWrong) {
  auto expect_error = [](tls_files f, tls_side side, const std::string& needle) {
    auto c = make_tls_context(f, side);
    ASSERT_FALSE(c) << "loaded, expected: " << needle;
    EXPECT_NE(describe(c.error()).find(needle), std::string::npos) << describe(c.error());
  };
  auto& p = pki();
  auto f = p.device_files("dev1");
  f.cert = p.dir + "/ca1/missing.pem";
  expect_error(f, tls_side::client, "cannot read certificate file");
  expect_error(f, tls_side::client, "missing.pem");

  f = p.device_files("dev1");
  f.key = p.dir + "/ca1/ps.key";
  expect_error(f, tls_side::client, "does not match certificate");

  f = p.device_files("dev1");
  f.ca = p.dir + "/ca2/ca.pem";
  expect_error(f, tls_side::client, "is not signed by the CA");

  f = p.device_files("expired");
  expect_error(f, tls_side::client, "certificate expired");

  f = p.device_files("revoked");
  expect_error(f, tls_side::client, "certificate revoked");

  f = p.server_files();
  f.crl = p.dir + "/ca2/crl.pem";
  expect_error(f, tls_side::server, "CRL");
  expect_error(f, tls_side::server, "not signed by the CA");

  f = p.server_files();
  f.crl = p.dir + "/ca1/ca.pem";  // not a CRL at all
  expect_error(f, tls_side::server, "holds no PEM CRL");

  // A device certificate is client-only: it cannot serve.
  f = p.device_files("dev1");
  expect_error(f, tls_side::server, "not valid for this role");

  f = p.server_files();
  f.ca = p.dir + "/ca1/ps.key";
  expect_error(f, tls_side::server, "holds no PEM certificate");
}

// ------------------------------------------------------------ sessions

TEST(TlsSession, HandshakeThenDataBothWays) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  auto cctx = ctx_or_die(pki().device_files("dev1"), tls_side::client);
  tls_session server(sctx), client(cctx, "127.0.0.1");
  // Written before the handshake: held, then sent once it completes.
  std::vector<char> early;
  ASSERT_FALSE(client.write("hello", 5, early));
  EXPECT_TRUE(early.empty()) << "plaintext must not leave before the handshake";
  wire_pair w(client, server);
  w.step = 333;  // records split at odd offsets
  w.run();
  ASSERT_FALSE(w.client_err) << describe(w.client_err);
  ASSERT_FALSE(w.server_err) << describe(w.server_err);
  ASSERT_TRUE(client.handshake_done());
  ASSERT_TRUE(server.handshake_done());
  EXPECT_EQ(server.peer_name(), "dev1");
  EXPECT_EQ(client.peer_name(), "ps");
  EXPECT_EQ(std::string(w.at_server.begin(), w.at_server.end()), "hello");

  auto up = pattern(3 << 20, 1), down = pattern((1 << 20) + 7, 2);
  std::vector<char> c2s, s2c;
  ASSERT_FALSE(client.write(up.data(), up.size(), c2s));
  ASSERT_FALSE(server.write(down.data(), down.size(), s2c));
  EXPECT_GT(c2s.size(), up.size());  // records add their overhead
  EXPECT_EQ(std::search(c2s.begin(), c2s.end(), up.begin(), up.begin() + 64), c2s.end())
    << "plaintext visible on the wire";
  w.at_server.clear();
  for (size_t i = 0; i < c2s.size(); i += 4093)
    ASSERT_FALSE(server.feed(c2s.data() + i, std::min<size_t>(4093, c2s.size() - i), w.at_server));
  ASSERT_FALSE(client.feed(s2c.data(), s2c.size(), w.at_client));
  EXPECT_TRUE(w.at_server == up);
  EXPECT_TRUE(w.at_client == down);

  // pull() into a caller's buffer, no more than asked for.
  std::vector<char> wire;
  ASSERT_FALSE(client.write(up.data(), 100000, wire));
  ASSERT_FALSE(server.push(wire.data(), wire.size()));
  std::vector<char> got;
  char buf[1000];
  for (;;) {
    auto n = server.pull(buf, sizeof(buf));
    ASSERT_TRUE(n) << describe(n.error());
    ASSERT_LE(*n, sizeof(buf));
    if (*n == 0) break;
    got.insert(got.end(), buf, buf + *n);
  }
  EXPECT_TRUE(std::equal(got.begin(), got.end(), up.begin()) && got.size() == 100000);

  // Two pushes before any pull: the first one's bytes are kept, not lost.
  wire.clear();
  got.clear();
  ASSERT_FALSE(client.write(up.data(), 50000, wire));
  {
    std::vector<char> first(wire.begin(), wire.begin() + 20000);
    ASSERT_FALSE(server.push(first.data(), first.size()));
    ASSERT_FALSE(server.push(wire.data() + 20000, wire.size() - 20000));
    std::fill(first.begin(), first.end(), 0);  // the session copied what it borrowed
  }
  for (;;) {
    auto n = server.pull(buf, sizeof(buf));
    ASSERT_TRUE(n) << describe(n.error());
    if (*n == 0) break;
    got.insert(got.end(), buf, buf + *n);
  }
  EXPECT_TRUE(got.size() == 50000 && std::equal(got.begin(), got.end(), up.begin()));
}

TEST(TlsSession, ClientWithoutCertificateRefused) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  auto f = pki().device_files("dev1");
  f.cert.clear();
  f.key.clear();
  auto cctx = ctx_or_die(f, tls_side::client);
  tls_session server(sctx), client(cctx);
  wire_pair w(client, server);
  w.run();
  ASSERT_TRUE(w.server_err);
  EXPECT_NE(describe(w.server_err).find("no certificate"), std::string::npos) << describe(w.server_err);
  EXPECT_FALSE(server.handshake_done());
  ASSERT_TRUE(w.client_err) << "the client should learn it was refused";
  EXPECT_NE(describe(w.client_err).find("no certificate"), std::string::npos) << describe(w.client_err);

  // The same client is fine where certificates are optional.
  auto open = ctx_or_die(pki().server_files(), tls_side::server, /*require_peer_cert=*/false);
  tls_session server2(open), client2(cctx);
  wire_pair w2(client2, server2);
  w2.run();
  ASSERT_FALSE(w2.server_err) << describe(w2.server_err);
  EXPECT_TRUE(server2.handshake_done());
  EXPECT_EQ(server2.peer_name(), "");
}

// A PS shard's link (peer_must_serve): the job's servers attach, a device's
// client-only certificate does not, though the same CA signed it.
TEST(TlsSession, ALinkBetweenServersRefusesADeviceCertificate) {
  auto link = make_tls_context(pki().server_files(), tls_side::server, true, /*peer_must_serve=*/true);
  ASSERT_TRUE(link) << describe(link.error());
  auto device = ctx_or_die(pki().device_files("dev1"), tls_side::client);
  tls_session server(*link), client(device);
  wire_pair w(client, server);
  w.run();
  ASSERT_TRUE(w.server_err);
  EXPECT_NE(describe(w.server_err).find("certificate not valid for this role"), std::string::npos)
    << describe(w.server_err);
  EXPECT_FALSE(server.handshake_done());

  auto coordinator = ctx_or_die(pki().server_files(), tls_side::client);
  tls_session server2(*link), client2(coordinator);
  wire_pair w2(client2, server2);
  w2.run();
  ASSERT_FALSE(w2.server_err) << describe(w2.server_err);
  ASSERT_FALSE(w2.client_err) << describe(w2.client_err);
  EXPECT_TRUE(server2.handshake_done());
  EXPECT_EQ(server2.peer_name(), "ps");

  // The device edge (a server without it) takes the same device.
  tls_session edge(ctx_or_die(pki().server_files(), tls_side::server)), client3(device);
  wire_pair w3(client3, edge);
  w3.run();
  EXPECT_FALSE(w3.server_err) << describe(w3.server_err);
  EXPECT_TRUE(edge.handshake_done());
}

TEST(TlsSession, CertificateFromAnotherCaRefused) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  // The intruder trusts our CA (it knows whom it dials) but its own
  // certificate comes from ca2.
  auto f = pki().files("ca2", "intruder");
  f.ca = pki().dir + "/ca1/ca.pem";
  f.crl.clear();
  // Its own check fails (not our CA); use OpenSSL directly to present it.
  EXPECT_FALSE(make_tls_context(f, tls_side::client));
  raw_openssl_client c(f.cert, f.key, f.ca);
  tls_session server(sctx);
  auto err = raw_handshake(c, server);
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("unknown CA"), std::string::npos) << describe(err);

  // And a client of ours refuses a server from another CA.
  auto other_server = ctx_or_die(pki().files("ca2", "ps2"), tls_side::server);
  auto cctx = ctx_or_die(pki().device_files("dev1"), tls_side::client);
  tls_session s2(other_server), cl(cctx);
  wire_pair w(cl, s2);
  w.run();
  ASSERT_TRUE(w.client_err);
  EXPECT_NE(describe(w.client_err).find("unknown CA"), std::string::npos) << describe(w.client_err);
}

TEST(TlsSession, RevokedCertificateRefused) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  // Without the CRL the revoked device could load; with our CRL the server refuses it.
  auto f = pki().device_files("revoked");
  f.crl.clear();
  auto cctx = ctx_or_die(f, tls_side::client);
  tls_session server(sctx), client(cctx);
  wire_pair w(client, server);
  w.run();
  ASSERT_TRUE(w.server_err);
  EXPECT_NE(describe(w.server_err).find("certificate revoked"), std::string::npos) << describe(w.server_err);
  EXPECT_NE(describe(w.server_err).find("'revoked'"), std::string::npos) << describe(w.server_err);
  ASSERT_TRUE(w.client_err);
  EXPECT_NE(describe(w.client_err).find("certificate revoked"), std::string::npos) << describe(w.client_err);
  EXPECT_EQ(server.peer_name(), "");
}

TEST(TlsSession, ExpiredCertificateRefused) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  auto f = pki().device_files("expired");
  raw_openssl_client c(f.cert, f.key, f.ca);
  tls_session server(sctx);
  auto err = raw_handshake(c, server);
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("certificate expired"), std::string::npos) << describe(err);
}

TEST(TlsSession, ServerCertificateMustNameTheHostDialled) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  auto cctx = ctx_or_die(pki().device_files("dev1"), tls_side::client);
  for (std::string host : {"localhost", "127.0.0.1", "ps.cluster.test"}) {
    tls_session server(sctx), client(cctx, host);
    wire_pair w(client, server);
    w.run();
    EXPECT_FALSE(w.client_err) << host << ": " << describe(w.client_err);
  }
  tls_session server(sctx), client(cctx, "10.9.9.9");
  wire_pair w(client, server);
  w.run();
  ASSERT_TRUE(w.client_err);
  EXPECT_NE(describe(w.client_err).find("does not name the host"), std::string::npos) << describe(w.client_err);
}

TEST(TlsSession, GarbageInsteadOfClientHelloIsAnError) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  tls_session server(sctx);
  std::vector<char> plain;
  std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  auto err = server.feed(junk.data(), junk.size(), plain);
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("not a TLS 1.3 peer"), std::string::npos) << describe(err);
  EXPECT_TRUE(plain.empty());
  EXPECT_TRUE(server.feed("x", 1, plain)) << "a failed session stays failed";

  tls_session server2(sctx);
  auto bytes = pattern(100000, 5);
  EXPECT_TRUE(server2.feed(bytes.data(), bytes.size(), plain));
  EXPECT_TRUE(plain.empty());
}

TEST(TlsSession, TamperedRecordIsAnError) {
  auto sctx = ctx_or_die(pki().server_files(), tls_side::server);
  auto cctx = ctx_or_die(pki().device_files("dev1"), tls_side::client);
  tls_session server(sctx), client(cctx);
  wire_pair w(client, server);
  w.run();
  ASSERT_TRUE(server.handshake_done());
  std::vector<char> wire, plain;
  auto data = pattern(50000, 3);
  ASSERT_FALSE(client.write(data.data(), data.size(), wire));
  wire[wire.size() / 2] ^= 1;
  auto err = server.feed(wire.data(), wire.size(), plain);
  ASSERT_TRUE(err);
  EXPECT_LT(plain.size(), data.size());
}

}  // namespace
