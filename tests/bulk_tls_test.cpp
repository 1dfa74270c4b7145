// The bulk channel over TLS, end to end on loopback: frames both ways with
// the peers named, certificates refused at the handshake, hostile peers
// closing only their own connection. Certificates come from deploy/ca.sh.

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/transport/tls_session.hpp"
#include "tests/bulk_fixture.hpp"
#include "tests/tls_fixture.hpp"

using namespace cleave;
using namespace cleave::transport;
using namespace cleave::testing;
using namespace std::chrono_literals;

namespace {

const cleave::testing::test_pki& pki() {
  static cleave::testing::test_pki p;
  return p;
}

bulk_options tls_opts(const tls_files& f, tls_side side, bool require = true) {
  bulk_options o;
  auto ctx = make_tls_context(f, side, require);
  EXPECT_TRUE(ctx) << (ctx ? "" : cleave::describe(ctx.error()));
  if (ctx) o.tls = *ctx;
  return o;
}

// A TLS peer by hand: a blocking socket with a tls_session on top, to play
// a hostile client that completes the handshake and then misbehaves.
struct tls_raw_client {
  raw_client sock;
  tls_session tls;
  std::vector<char> plain;
  tls_raw_client(uint16_t port, std::shared_ptr<const tls_context> ctx) : sock(port), tls(std::move(ctx)) {}
  bool handshake() {
    std::vector<char> out;
    tls.drain(out);
    if (!sock.write_all(out.data(), out.size())) return false;
    char buf[16384];
    while (!tls.handshake_done()) {
      auto r = ::recv(sock.fd, buf, sizeof(buf), 0);
      if (r <= 0) return false;
      if (tls.feed(buf, static_cast<size_t>(r), plain)) return false;
      out.clear();
      tls.drain(out);
      if (!out.empty() && !sock.write_all(out.data(), out.size())) return false;
    }
    return true;
  }
  bool send(const void* p, size_t n) {
    std::vector<char> out;
    if (tls.write(static_cast<const char*>(p), n, out)) return false;
    tls.drain(out);
    return sock.write_all(out.data(), out.size());
  }
};

TEST(BulkTls, FramesRoundTripBothWaysAndPeersAreNamed) {
  node n;
  auto server_col = std::make_shared<collector>();
  auto client_col = std::make_shared<collector>();
  auto sopts = tls_opts(pki().server_files(), tls_side::server);
  sopts.chunk_bytes = 1 << 20;  // the chunked path inside TLS too
  auto lst = n.listen(n.sink(server_col), sopts);
  ASSERT_TRUE(lst) << cleave::describe(lst.error());
  auto ch = n.connect(lst->port, n.sink(client_col),
                      tls_opts(pki().device_files("dev1"), tls_side::client));
  ASSERT_TRUE(ch) << cleave::describe(ch.error());

  const std::vector<size_t> sizes{0, 1, 24, size_t{4} << 20, (size_t{3} << 20) + 5};
  std::vector<std::vector<char>> sent;
  for (size_t i = 0; i < sizes.size(); ++i) {
    sent.push_back(pattern(sizes[i], static_cast<uint32_t>(i + 1)));
    auto err = send_frame(*n.sys, *ch, static_cast<uint16_t>(i + 1), 100 + i, sent.back());
    ASSERT_FALSE(err) << cleave::describe(err);
  }
  {  // a zero-copy buffer through TLS comes back emptied
    caf::scoped_actor self{*n.sys};
    bulk_buffer b(100000);
    std::memcpy(b.payload(), pattern(100000, 9).data(), 100000);
    self->request(*ch, 10s, bulk_send_atom::value, uint16_t{9}, uint64_t{9}, std::move(b))
      .receive([&](bulk_buffer& back) { EXPECT_EQ(back.size(), 0u); },
               [&](caf::error& e) { ADD_FAILURE() << cleave::describe(e); });
  }
  ASSERT_TRUE(server_col->wait([&] { return server_col->frames.size() == sizes.size() + 1; }));
  uint64_t conn = 0;
  {
    std::lock_guard<std::mutex> lk(server_col->mx);
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto& f = server_col->frames[i];
      EXPECT_EQ(f.kind, i + 1);
      EXPECT_EQ(f.tag, 100 + i);
      EXPECT_TRUE(f.payload == sent[i]) << "payload " << i << " corrupted";
      conn = f.conn;
    }
    EXPECT_TRUE(server_col->frames.back().payload == pattern(100000, 9));
    ASSERT_EQ(server_col->opened.size(), 1u);
    ASSERT_EQ(server_col->peers.size(), 1u);
    EXPECT_EQ(server_col->peers[0], std::make_pair(conn, std::string("dev1")));
  }
  std::vector<float> tensor(1 << 20);
  for (size_t i = 0; i < tensor.size(); ++i) tensor[i] = static_cast<float>(i) * 0.25f;
  {
    caf::scoped_actor self{*n.sys};
    self->request(lst->channel, 10s, bulk_send_atom::value, conn, uint16_t{7}, uint64_t{77}, tensor)
      .receive([&](std::vector<float>&) {}, [&](caf::error& e) { ADD_FAILURE() << cleave::describe(e); });
  }
  ASSERT_TRUE(client_col->wait([&] { return client_col->frames.size() == 1; }));
  std::lock_guard<std::mutex> lk(client_col->mx);
  ASSERT_EQ(client_col->frames[0].float_count(), tensor.size());
  EXPECT_EQ(std::memcmp(client_col->frames[0].floats(), tensor.data(), tensor.size() * sizeof(float)), 0);
  ASSERT_EQ(client_col->peers.size(), 1u);
  EXPECT_EQ(client_col->peers[0].second, "ps");
}

TEST(BulkTls, RefusedCertificatesAreClosedAtTheHandshake) {
  node n;
  auto col = std::make_shared<collector>();
  auto lst = n.listen(n.sink(col), tls_opts(pki().server_files(), tls_side::server));
  ASSERT_TRUE(lst);

  auto revoked = pki().device_files("revoked");
  revoked.crl.clear();  // its own side does not know it is revoked
  auto none = pki().device_files("dev1");
  none.cert.clear();
  none.key.clear();
  // The intruder trusts both CAs (so it accepts our server) but holds ca2's certificate.
  auto intruder = pki().files("ca2", "intruder");
  intruder.crl.clear();
  intruder.ca = pki().dir + "/both_cas.pem";
  ASSERT_EQ(std::system(("cat " + pki().dir + "/ca1/ca.pem " + pki().dir + "/ca2/ca.pem > " + intruder.ca).c_str()), 0);

  struct refusal {
    tls_files files;
    std::string reason;
  };
  std::vector<refusal> cases{{revoked, "certificate revoked"}, {none, "no certificate"}, {intruder, "unknown CA"}};
  for (size_t k = 0; k < cases.size(); ++k) {
    auto client_col = std::make_shared<collector>();
    auto ch = n.connect(lst->port, n.sink(client_col), tls_opts(cases[k].files, tls_side::client));
    ASSERT_TRUE(ch);
    ASSERT_TRUE(col->wait([&] { return col->closed.size() == k + 1; })) << cases[k].reason;
    {
      std::lock_guard<std::mutex> lk(col->mx);
      EXPECT_NE(col->closed[k].second.find(cases[k].reason), std::string::npos) << col->closed[k].second;
      EXPECT_NE(col->closed[k].second.find("TLS handshake refused"), std::string::npos) << col->closed[k].second;
    }
    // The client hears why, and its sends fail.
    ASSERT_TRUE(client_col->wait([&] { return client_col->closed.size() == 1; }));
    {
      std::lock_guard<std::mutex> lk(client_col->mx);
      EXPECT_NE(client_col->closed[0].second.find(cases[k].reason), std::string::npos)
        << client_col->closed[0].second;
    }
    EXPECT_TRUE(send_frame(*n.sys, *ch, 1, 1, {1, 2, 3}));
  }
  {
    std::lock_guard<std::mutex> lk(col->mx);
    EXPECT_TRUE(col->opened.empty()) << "a refused peer reached the sink";
    EXPECT_TRUE(col->frames.empty());
  }
  // A client of ours refuses a server from another CA, and one whose
  // certificate does not name the host dialled.
  auto other = n.listen(n.sink(std::make_shared<collector>()),
                        tls_opts(pki().files("ca2", "ps2"), tls_side::server));
  ASSERT_TRUE(other);
  auto client_col = std::make_shared<collector>();
  auto ch = n.connect(other->port, n.sink(client_col),
                      tls_opts(pki().device_files("dev1"), tls_side::client));
  ASSERT_TRUE(ch);
  ASSERT_TRUE(client_col->wait([&] { return client_col->closed.size() == 1; }));
  {
    std::lock_guard<std::mutex> lk(client_col->mx);
    EXPECT_NE(client_col->closed[0].second.find("unknown CA"), std::string::npos) << client_col->closed[0].second;
    EXPECT_TRUE(client_col->opened.empty());
  }
  // Contexts of the wrong side are refused up front.
  EXPECT_FALSE(spawn_bulk_listener(*n.sys, 0, n.sink(std::make_shared<collector>()),
                                   tls_opts(pki().device_files("dev1"), tls_side::client)));
  EXPECT_FALSE(connect_bulk(*n.sys, "127.0.0.1", lst->port, n.sink(std::make_shared<collector>()),
                            tls_opts(pki().server_files(), tls_side::server)));
}

TEST(BulkTls, HostilePeersCloseOnlyTheirConnection) {
  node n;
  auto col = std::make_shared<collector>();
  auto opts = tls_opts(pki().server_files(), tls_side::server);
  opts.stall_timeout = 300ms;
  auto lst = n.listen(n.sink(col), opts);
  ASSERT_TRUE(lst);
  auto closed_with = [&](size_t k) { return col->closed_reason(k); };
  {  // random bytes instead of a ClientHello
    raw_client bad(lst->port);
    auto junk = pattern(100000, 77);
    bad.write_all(junk.data(), junk.size());
    EXPECT_TRUE(bad.sees_close());
    EXPECT_NE(closed_with(0).find("not a TLS 1.3 peer"), std::string::npos) << closed_with(0);
  }
  {  // a plaintext bulk channel's hello on the TLS port
    raw_client bad(lst->port);
    send_hello(bad);
    EXPECT_TRUE(bad.sees_close());
    EXPECT_NE(closed_with(1).find("not a TLS 1.3 peer"), std::string::npos) << closed_with(1);
  }
  {  // connects and says nothing: the stall timeout bounds the handshake
    raw_client idle(lst->port);
    EXPECT_TRUE(idle.sees_close());
    EXPECT_NE(closed_with(2).find("TLS handshake not completed"), std::string::npos) << closed_with(2);
  }
  auto rss_before = max_rss_kib();
  {  // a valid peer, inside TLS, claims a 4 GiB frame
    tls_raw_client bad(lst->port, *make_tls_context(pki().device_files("dev2"), tls_side::client));
    ASSERT_TRUE(bad.handshake());
    auto h = encode_header(frame_header{kind_hello, hello_payload_size, 0});
    auto p = encode_hello(hello{uint64_t{1} << 30, default_max_payload});
    auto big = encode_header(frame_header{1, uint64_t{4} << 30, 0});
    std::vector<char> msg(h.begin(), h.end());
    msg.insert(msg.end(), p.begin(), p.end());
    msg.insert(msg.end(), big.begin(), big.end());
    ASSERT_TRUE(bad.send(msg.data(), msg.size()));
    EXPECT_TRUE(bad.sock.sees_close());
    EXPECT_NE(closed_with(3).find("exceeds the cap"), std::string::npos) << closed_with(3);
  }
  {  // a valid peer sends half a frame, then nothing
    tls_raw_client bad(lst->port, *make_tls_context(pki().device_files("dev2"), tls_side::client));
    ASSERT_TRUE(bad.handshake());
    auto h = encode_header(frame_header{kind_hello, hello_payload_size, 0});
    auto p = encode_hello(hello{uint64_t{1} << 30, default_max_payload});
    auto half = encode_header(frame_header{1, 1 << 20, 0});
    std::vector<char> msg(h.begin(), h.end());
    msg.insert(msg.end(), p.begin(), p.end());
    msg.insert(msg.end(), half.begin(), half.end());
    msg.resize(msg.size() + 1000);
    ASSERT_TRUE(bad.send(msg.data(), msg.size()));
    EXPECT_TRUE(bad.sock.sees_close());
    EXPECT_NE(closed_with(4).find("stalled"), std::string::npos) << closed_with(4);
  }
  EXPECT_LT(max_rss_kib() - rss_before, 64 * 1024) << "a hostile header made the listener allocate";
  // The listener still serves a well-behaved client.
  auto ch = n.connect(lst->port, tls_opts(pki().device_files("dev1"), tls_side::client));
  ASSERT_TRUE(ch);
  ASSERT_FALSE(send_frame(*n.sys, *ch, 3, 33, pattern(1000, 5)));
  ASSERT_TRUE(col->wait([&] { return !col->frames.empty() && col->frames.back().tag == 33; }));
}

// Many frames in flight at once, of mixed sizes and buffer kinds, so large
// ones seal and decrypt on the crypto pool while small ones queue behind
// them: all arrive, in order, intact, on a shared pool and on a channel's own.
TEST(BulkTls, PipelinedFramesOnThePoolArriveInOrder) {
  for (int threads : {-1, 1}) {
    node n;
    auto col = std::make_shared<collector>();
    auto sopts = tls_opts(pki().server_files(), tls_side::server);
    sopts.tls_threads = threads;
    sopts.chunk_bytes = 3 << 20;  // 4 MiB frames take the chunked path
    auto lst = n.listen(n.sink(col), sopts);
    ASSERT_TRUE(lst);
    auto copts = tls_opts(pki().device_files("dev1"), tls_side::client);
    copts.tls_threads = threads;
    auto ch = n.connect(lst->port, n.sink(std::make_shared<collector>()), copts);
    ASSERT_TRUE(ch);
    caf::scoped_actor self{*n.sys};
    constexpr int frames = 40;
    std::vector<std::vector<char>> sent;
    for (int i = 0; i < frames; ++i) {
      size_t size = i % 4 == 0 ? (size_t{4} << 20) + i : i % 4 == 1 ? 70000 + i : i % 4 == 2 ? 20 : 2 << 20;
      sent.push_back(pattern(size, static_cast<uint32_t>(i + 100)));
      if (i % 2 == 0) {
        bulk_buffer b(size);
        std::memcpy(b.payload(), sent.back().data(), size);
        self->send(*ch, bulk_send_atom::value, uint16_t{5}, uint64_t(i), std::move(b));
      } else {
        self->send(*ch, bulk_send_atom::value, uint16_t{5}, uint64_t(i), sent.back());
      }
    }
    int replies = 0, errors = 0;
    self->receive_for(replies, frames)(
      [&](bulk_buffer& b) { EXPECT_EQ(b.size(), 0u); },
      [&](std::vector<char>&) {},
      [&](caf::error& e) {
        ++errors;
        ADD_FAILURE() << cleave::describe(e);
      });
    EXPECT_EQ(errors, 0);
    ASSERT_TRUE(col->wait([&] { return col->frames.size() == frames; }, 30s)) << "threads " << threads;
    std::lock_guard<std::mutex> lk(col->mx);
    for (int i = 0; i < frames; ++i) {
      EXPECT_EQ(col->frames[i].tag, uint64_t(i)) << "threads " << threads;
      EXPECT_TRUE(col->frames[i].payload == sent[i]) << "frame " << i << " corrupted, threads " << threads;
    }
  }
}

// Closing while frames are sealing and decrypting on the pool: every send is
// answered (delivered or failed with the reason), the listener's sink hears
// of the close, and the listener carries on with the next connection.
TEST(BulkTls, ClosedMidTransferOnThePool) {
  node n;
  auto col = std::make_shared<collector>();
  auto lst = n.listen(n.sink(col), tls_opts(pki().server_files(), tls_side::server));
  ASSERT_TRUE(lst);
  for (int round = 0; round < 2; ++round) {
    auto ch = n.connect(lst->port, n.sink(std::make_shared<collector>()),
                        tls_opts(pki().device_files("dev1"), tls_side::client));
    ASSERT_TRUE(ch);
    caf::scoped_actor self{*n.sys};
    constexpr int frames = 12;
    for (int i = 0; i < frames; ++i) {
      bulk_buffer b(size_t{8} << 20);
      std::memset(b.payload(), i, b.size());
      self->send(*ch, bulk_send_atom::value, uint16_t{5}, uint64_t(i), std::move(b));
    }
    // Let the first frames get going, then close: the server side
    // (round 0) or the client itself (round 1).
    ASSERT_TRUE(col->wait([&] { return !col->frames.empty() || col->opened.size() > size_t(round); }));
    if (round == 0) {
      uint64_t conn = 0;
      {
        std::lock_guard<std::mutex> lk(col->mx);
        conn = col->opened.back().first;
      }
      self->send(lst->channel, bulk_closed_atom::value, conn);
    } else {
      self->send(*ch, bulk_closed_atom::value, uint64_t{0});  // no such connection: harmless
      self->send_exit(*ch, caf::exit_reason::user_shutdown);
    }
    int answered = 0;
    if (round == 0) {
      self->receive_for(answered, frames)([](bulk_buffer&) {}, [](caf::error&) {});
      EXPECT_EQ(answered, frames);
    }
    ASSERT_TRUE(col->wait([&] { return col->closed.size() == size_t(round + 1); }, 20s));
    // Whatever arrived before the close is intact.
    std::lock_guard<std::mutex> lk(col->mx);
    for (auto& f : col->frames)
      EXPECT_EQ(std::count(f.payload.begin(), f.payload.end(), static_cast<char>(f.tag)),
                static_cast<long>(f.payload.size()));
    col->frames.clear();
  }
  // Still serving.
  auto ch = n.connect(lst->port, n.sink(std::make_shared<collector>()),
                      tls_opts(pki().device_files("dev2"), tls_side::client));
  ASSERT_TRUE(ch);
  ASSERT_FALSE(send_frame(*n.sys, *ch, 3, 99, pattern(size_t{1} << 20, 5)));
  ASSERT_TRUE(col->wait([&] { return !col->frames.empty() && col->frames.back().tag == 99; }));
}

}  // namespace
