// Bulk tensor transport: the broker channel end to end on loopback, including
// hostile peers (the frame codec and windows alone: frame_test.cpp; over TLS:
// bulk_tls_test.cpp).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <gtest/gtest.h>

#include "actors/transport/bulk_channel.hpp"
#include "actors/transport/frame.hpp"
#include "schema/errors.hpp"
#include "schema/tile_codec.hpp"
#include "tests/bulk_fixture.hpp"
#include "tests/raw_client.hpp"

using namespace cleave;
using namespace cleave::transport;
using namespace std::chrono_literals;
using namespace cleave::testing;

namespace {

TEST(BulkChannel, LazyCreditNeverBlocksThePeersLargestFrame) {
  node n;
  auto col = std::make_shared<collector>();
  bulk_options opts;
  opts.max_payload = 64 << 10;
  opts.lazy_credit_bytes = 4 * frame_cost(0);
  opts.receive_window = frame_cost(opts.max_payload);  // too small for the credit held back
  EXPECT_FALSE(spawn_bulk_listener(*n.sys, 0, n.sink(col), opts));
  opts.receive_window = frame_cost(opts.max_payload) + opts.lazy_credit_bytes;
  auto lst = n.listen(n.sink(col), opts);
  ASSERT_TRUE(lst);
  auto ch = n.connect(lst->port);
  ASSERT_TRUE(ch);
  // Heartbeat-like frames whose credit the listener keeps, each time a
  // largest frame on top: it is never stuck behind the held credit.
  size_t expected = 0;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 3; ++i) ASSERT_FALSE(send_frame(*n.sys, *ch, 4, 0, {}));
    ASSERT_FALSE(send_frame(*n.sys, *ch, 5, round, pattern(opts.max_payload, round)));
    expected += 4;
    ASSERT_TRUE(col->wait([&] { return col->frames.size() == expected; })) << "round " << round;
  }
}

TEST(BulkChannel, FramesArriveIntactInOrderBothWays) {
  node n;
  auto server_col = std::make_shared<collector>();
  auto client_col = std::make_shared<collector>();
  auto lst = n.listen(n.sink(server_col));
  ASSERT_TRUE(lst) << cleave::describe(lst.error());
  auto ch = n.connect(lst->port, n.sink(client_col));
  ASSERT_TRUE(ch) << cleave::describe(ch.error());

  const std::vector<size_t> sizes{0, 1, size_t{4} << 20};
  std::vector<std::vector<char>> sent;
  for (size_t i = 0; i < sizes.size(); ++i) {
    sent.push_back(pattern(sizes[i], static_cast<uint32_t>(i + 1)));
    auto err = send_frame(*n.sys, *ch, static_cast<uint16_t>(i + 1), 100 + i, sent.back());
    ASSERT_FALSE(err) << cleave::describe(err);
  }
  ASSERT_TRUE(server_col->wait([&] { return server_col->frames.size() == sizes.size(); }));
  uint64_t conn = 0;
  {
    std::lock_guard<std::mutex> lk(server_col->mx);
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto& f = server_col->frames[i];
      EXPECT_EQ(f.kind, i + 1);
      EXPECT_EQ(f.tag, 100 + i);
      EXPECT_EQ(f.payload.size(), sizes[i]);
      EXPECT_TRUE(f.payload == sent[i]) << "payload " << i << " corrupted";
      conn = f.conn;
    }
    ASSERT_EQ(server_col->opened.size(), 1u);
    EXPECT_EQ(server_col->opened[0].first, conn);
    EXPECT_EQ(server_col->opened[0].second, lst->channel);
  }

  // Reply path: the server sends back on the same connection, as floats.
  std::vector<float> tensor(1 << 20);
  for (size_t i = 0; i < tensor.size(); ++i) tensor[i] = static_cast<float>(i) * 0.5f;
  {
    caf::scoped_actor self{*n.sys};
    bool ok = false;
    self->request(lst->channel, 10s, bulk_send_atom::value, conn, uint16_t{7}, uint64_t{77}, tensor)
      .receive([&](std::vector<float>& back) { ok = back.size() == tensor.size(); },
               [&](caf::error& e) { ADD_FAILURE() << cleave::describe(e); });
    EXPECT_TRUE(ok);
  }
  ASSERT_TRUE(client_col->wait([&] { return client_col->frames.size() == 1; }));
  {
    std::lock_guard<std::mutex> lk(client_col->mx);
    auto& f = client_col->frames[0];
    EXPECT_EQ(f.kind, 7);
    EXPECT_EQ(f.tag, 77u);
    ASSERT_EQ(f.float_count(), tensor.size());
    EXPECT_EQ(std::memcmp(f.floats(), tensor.data(), tensor.size() * sizeof(float)), 0);
  }

  // Local send errors: reserved kinds and frames over the peer's cap.
  EXPECT_TRUE(send_frame(*n.sys, *ch, kind_hello, 0, {}));
  auto small = bulk_options{};
  small.max_payload = 1000;
  auto col3 = std::make_shared<collector>();
  auto lst3 = n.listen(n.sink(col3), small);
  ASSERT_TRUE(lst3);
  auto ch3 = n.connect(lst3->port);
  ASSERT_TRUE(ch3);
  auto err = send_frame(*n.sys, *ch3, 1, 0, std::vector<char>(1001));
  ASSERT_TRUE(err);
  EXPECT_NE(cleave::describe(err).find("peer's cap"), std::string::npos) << cleave::describe(err);
  EXPECT_FALSE(send_frame(*n.sys, *ch3, 1, 0, std::vector<char>(1000)));
}

TEST(BulkChannel, ZeroCopyBuffersInterleaveWithCopiedPayloads) {
  node n;
  auto col = std::make_shared<collector>();
  auto lst = n.listen(n.sink(col));
  ASSERT_TRUE(lst);
  auto ch = n.connect(lst->port);
  ASSERT_TRUE(ch);
  // All requests issued before any reply is read: frames queue behind the
  // window and behind each other; bulk_buffers wait for an empty write buffer.
  const int frames = 24;
  std::vector<std::vector<char>> sent;
  caf::scoped_actor self{*n.sys};
  using handle = decltype(self->request(*ch, 10s, bulk_send_atom::value, uint16_t{1}, uint64_t{0},
                                        std::vector<char>{}));
  std::vector<handle> pending;
  for (int i = 0; i < frames; ++i) {
    auto p = pattern(size_t(1 + i) * 100000, uint32_t(100 + i));
    sent.push_back(p);
    if (i % 3 == 2) {
      pending.push_back(self->request(*ch, 10s, bulk_send_atom::value, uint16_t{1}, uint64_t(i), p));
    } else {
      bulk_buffer b(p.size());
      std::memcpy(b.payload(), p.data(), p.size());
      pending.push_back(self->request(*ch, 10s, bulk_send_atom::value, uint16_t{1}, uint64_t(i), std::move(b)));
    }
  }
  int replies = 0;
  for (int i = 0; i < frames; ++i) {
    if (i % 3 == 2)
      pending[i].receive([&](std::vector<char>& back) { ++replies; EXPECT_EQ(back, sent[i]); },
                         [&](caf::error& e) { ADD_FAILURE() << cleave::describe(e); });
    else
      pending[i].receive([&](bulk_buffer& back) { ++replies; EXPECT_EQ(back.size(), 0u); },
                         [&](caf::error& e) { ADD_FAILURE() << cleave::describe(e); });
  }
  EXPECT_EQ(replies, frames);
  ASSERT_TRUE(col->wait([&] { return col->frames.size() == size_t(frames); }));
  std::lock_guard<std::mutex> lk(col->mx);
  for (int i = 0; i < frames; ++i) {
    EXPECT_EQ(col->frames[i].tag, uint64_t(i));
    EXPECT_TRUE(col->frames[i].payload == sent[i]) << "frame " << i;
  }
}

TEST(BulkChannel, ConnectFailureIsAnError) {
  node n;
  uint16_t port;
  {  // a port that was free a moment ago
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    ::close(fd);
  }
  auto ch = connect_bulk(*n.sys, "127.0.0.1", port, n.sink(std::make_shared<collector>()));
  ASSERT_FALSE(ch);
  EXPECT_NE(cleave::describe(ch.error()).find("cannot connect"), std::string::npos);
  EXPECT_FALSE(spawn_bulk_listener(*n.sys, 0, caf::actor{}));
}

// A peer whose accept queue is full drops SYNs: without a timeout the
// connect would wait for the kernel's (minutes).
TEST(BulkChannel, ConnectGivesUpAfterItsTimeout) {
  node n;
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(lfd, 0), 0);  // never accepts
  socklen_t len = sizeof(a);
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {  // fill the accept queue
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);
  bulk_options o;
  o.connect_timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  auto ch = connect_bulk(*n.sys, "127.0.0.1", ntohs(a.sin_port), n.sink(std::make_shared<collector>()), o);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(ch);
  EXPECT_NE(cleave::describe(ch.error()).find("connect timeout"), std::string::npos) << cleave::describe(ch.error());
  EXPECT_LT(took, 3s);
  for (int fd : fillers) ::close(fd);
  ::close(lfd);
}

TEST(BulkChannel, ListenerStopsWhenItsSinkTerminates) {
  node n;
  auto sink = n.sys->spawn(sink_fun, std::make_shared<collector>(), false);
  auto lst = spawn_bulk_listener(*n.sys, 0, sink);
  ASSERT_TRUE(lst);
  caf::scoped_actor self{*n.sys};
  self->monitor(lst->channel);
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(5s) >> [] {});
  EXPECT_TRUE(down);
  raw_client late(lst->port);
  EXPECT_LT(late.fd, 0) << "the port should be closed";
}

TEST(BulkChannel, LargeFramesAreReadInChunks) {
  node n;
  auto col = std::make_shared<collector>();
  bulk_options opts;
  opts.chunk_bytes = 64 << 10;
  auto lst = n.listen(n.sink(col), opts);
  ASSERT_TRUE(lst);
  auto ch = n.connect(lst->port);
  ASSERT_TRUE(ch);
  auto big = pattern((3 << 20) + 17, 9);
  ASSERT_FALSE(send_frame(*n.sys, *ch, 5, 55, big));
  ASSERT_TRUE(col->wait([&] { return col->frames.size() == 1; }));
  std::lock_guard<std::mutex> lk(col->mx);
  EXPECT_TRUE(col->frames[0].payload == big);
}

TEST(BulkChannel, SenderWaitsForReceiverCredit) {
  node n;
  auto col = std::make_shared<collector>();
  bulk_options opts;
  opts.receive_window = 1 << 20;
  auto sink = n.sink(col, /*hold=*/true);
  auto lst = n.listen(sink, opts);
  ASSERT_TRUE(lst);
  auto ch = n.connect(lst->port);
  ASSERT_TRUE(ch);
  caf::scoped_actor self{*n.sys};
  const int frames = 12;  // 3 MiB against a 1 MiB window
  for (int i = 0; i < frames; ++i)
    self->send(*ch, bulk_send_atom::value, uint16_t{1}, uint64_t(i), std::vector<char>(256 << 10, char(i)));
  ASSERT_TRUE(col->wait([&] { return col->frames.size() >= 3; }));
  std::this_thread::sleep_for(300ms);
  {
    std::lock_guard<std::mutex> lk(col->mx);
    // 256 KiB + 4 KiB per frame: at most 4 fit the window while the sink holds its replies.
    EXPECT_LE(col->frames.size(), 4u);
  }
  // Release the held replies until everything has arrived.
  for (int k = 0; k < 500; ++k) {
    caf::anon_send(sink, release_atom::value);
    if (col->wait([&] { return col->frames.size() == size_t(frames); }, 20ms)) break;
  }
  std::lock_guard<std::mutex> lk(col->mx);
  ASSERT_EQ(col->frames.size(), static_cast<size_t>(frames));
  for (int i = 0; i < frames; ++i) EXPECT_EQ(col->frames[i].tag, uint64_t(i));
}

TEST(BulkChannel, HostileLengthClosesConnectionWithoutAllocating) {
  node n;
  auto col = std::make_shared<collector>();
  auto lst = n.listen(n.sink(col));
  ASSERT_TRUE(lst);
  auto rss_before = max_rss_kib();
  for (int i = 0; i < 4; ++i) {
    raw_client bad(lst->port);
    ASSERT_GE(bad.fd, 0);
    send_hello(bad);
    auto h = encode_header(frame_header{1, uint64_t{4} << 30, 0});  // claims 4 GiB
    ASSERT_TRUE(bad.write_all(h.data(), h.size()));
    EXPECT_TRUE(bad.sees_close());
  }
  ASSERT_TRUE(col->wait([&] { return col->closed.size() == 4; }));
  {
    std::lock_guard<std::mutex> lk(col->mx);
    EXPECT_NE(col->closed[0].second.find("exceeds the cap"), std::string::npos) << col->closed[0].second;
  }
  EXPECT_LT(max_rss_kib() - rss_before, 256 * 1024) << "hostile headers made the listener allocate";

  // A well-behaved client is still served.
  auto ch = n.connect(lst->port);
  ASSERT_TRUE(ch);
  auto p = pattern(4 << 20, 3);
  ASSERT_FALSE(send_frame(*n.sys, *ch, 2, 22, p));
  ASSERT_TRUE(col->wait([&] { return col->frames.size() == 1; }));
  std::lock_guard<std::mutex> lk(col->mx);
  EXPECT_TRUE(col->frames[0].payload == p);
}

TEST(BulkChannel, GarbageAndProtocolViolationsCloseOnlyThatConnection) {
  node n;
  auto col = std::make_shared<collector>();
  bulk_options opts;
  opts.receive_window = 64 << 10;
  opts.stall_timeout = 300ms;
  auto lst = n.listen(n.sink(col), opts);
  ASSERT_TRUE(lst);
  auto closed_with = [&](size_t k) { return col->closed_reason(k); };

  {  // random bytes
    raw_client bad(lst->port);
    auto junk = pattern(100000, 77);
    bad.write_all(junk.data(), junk.size());
    EXPECT_TRUE(bad.sees_close());
    EXPECT_NE(closed_with(0).find("magic"), std::string::npos);
  }
  {  // data before hello
    raw_client bad(lst->port);
    auto h = encode_header(frame_header{1, 0, 0});
    bad.write_all(h.data(), h.size());
    EXPECT_TRUE(bad.sees_close());
    EXPECT_NE(closed_with(1).find("before hello"), std::string::npos);
  }
  {  // ignores the 64 KiB window: frames written back to back without credit
    raw_client bad(lst->port);
    send_hello(bad);
    std::vector<char> burst;
    for (int i = 0; i < 4; ++i) {
      auto h = encode_header(frame_header{1, 60 << 10, 0});
      burst.insert(burst.end(), h.begin(), h.end());
      burst.resize(burst.size() + (60 << 10));
    }
    bad.write_all(burst.data(), burst.size());
    EXPECT_TRUE(bad.sees_close());
    EXPECT_NE(closed_with(2).find("overran"), std::string::npos);
  }
  {  // forged credit
    raw_client bad(lst->port);
    send_hello(bad);
    auto h = encode_header(frame_header{kind_credit, 0, 1 << 20});
    bad.write_all(h.data(), h.size());
    EXPECT_TRUE(bad.sees_close());
    EXPECT_NE(closed_with(3).find("credit"), std::string::npos);
  }
  {  // half a frame, then silence
    raw_client bad(lst->port);
    send_hello(bad);
    auto h = encode_header(frame_header{1, 1000, 0});
    bad.write_all(h.data(), h.size());
    bad.write_all(std::string(10, 'x').data(), 10);
    EXPECT_TRUE(bad.sees_close());
    EXPECT_NE(closed_with(4).find("stalled"), std::string::npos);
  }
  // The listener still serves a well-behaved client.
  auto ch = n.connect(lst->port);
  ASSERT_TRUE(ch);
  ASSERT_FALSE(send_frame(*n.sys, *ch, 3, 33, pattern(1000, 5)));
  ASSERT_TRUE(col->wait([&] { return !col->frames.empty() && col->frames.back().tag == 33; }));
}

TEST(BulkChannel, PerKindCapClosesBeforeThePayloadIsRead) {
  node n;
  auto col = std::make_shared<collector>();
  bulk_options opts;
  opts.max_payload = 1 << 20;
  // Kind 9 carries small control-ish frames; kind 5 may not exceed max_payload.
  opts.max_payload_for_kind = [](uint16_t kind) -> uint64_t {
    return kind == 9 ? 1000 : ~uint64_t{0};
  };
  auto lst = n.listen(n.sink(col), opts);
  ASSERT_TRUE(lst);
  {  // one byte over kind 9's cap: closed on the header, no payload sent at all
    raw_client bad(lst->port);
    send_hello(bad);
    auto h = encode_header(frame_header{9, 1001, 0});
    ASSERT_TRUE(bad.write_all(h.data(), h.size()));
    EXPECT_TRUE(bad.sees_close());
    ASSERT_TRUE(col->wait([&] { return col->closed.size() == 1; }));
    std::lock_guard<std::mutex> lk(col->mx);
    auto& reason = col->closed[0].second;
    EXPECT_NE(reason.find("kind 9"), std::string::npos) << reason;
    EXPECT_NE(reason.find("cap of 1000"), std::string::npos) << reason;
  }
  {  // min(max_payload, kind cap): kind 5's unlimited cap still meets max_payload
    raw_client bad(lst->port);
    send_hello(bad);
    auto h = encode_header(frame_header{5, (1 << 20) + 1, 0});
    ASSERT_TRUE(bad.write_all(h.data(), h.size()));
    EXPECT_TRUE(bad.sees_close());
    ASSERT_TRUE(col->wait([&] { return col->closed.size() == 2; }));
  }
  // At the cap, and other kinds up to max_payload, pass.
  auto ch = n.connect(lst->port);
  ASSERT_TRUE(ch);
  ASSERT_FALSE(send_frame(*n.sys, *ch, 9, 1, pattern(1000, 1)));
  ASSERT_FALSE(send_frame(*n.sys, *ch, 5, 2, pattern(1 << 20, 2)));
  ASSERT_TRUE(col->wait([&] { return col->frames.size() == 2; }));
  // A channel peer over the kind cap loses its connection like a raw one.
  ASSERT_FALSE(send_frame(*n.sys, *ch, 9, 3, pattern(1001, 3)));  // in the socket: sent
  ASSERT_TRUE(col->wait([&] { return col->closed.size() == 3; }));
  std::lock_guard<std::mutex> lk(col->mx);
  EXPECT_NE(col->closed[2].second.find("kind 9"), std::string::npos) << col->closed[2].second;
}

TEST(BulkChannel, ConnectionLimitAndCloseNotification) {
  node n;
  auto col = std::make_shared<collector>();
  bulk_options opts;
  opts.max_connections = 1;
  auto lst = n.listen(n.sink(col), opts);
  ASSERT_TRUE(lst);
  auto client_col = std::make_shared<collector>();
  auto ch = n.connect(lst->port, n.sink(client_col));
  ASSERT_TRUE(ch);
  ASSERT_TRUE(col->wait([&] { return col->opened.size() == 1; }));
  {
    raw_client extra(lst->port);
    EXPECT_TRUE(extra.sees_close());
  }
  // Closing the connection from the server side reaches the client's sink.
  uint64_t conn;
  {
    std::lock_guard<std::mutex> lk(col->mx);
    conn = col->opened[0].first;
  }
  caf::anon_send(lst->channel, bulk_closed_atom::value, conn);
  ASSERT_TRUE(client_col->wait([&] { return client_col->closed.size() == 1; }));
  {
    std::lock_guard<std::mutex> lk(client_col->mx);
    EXPECT_EQ(client_col->closed[0].second, "connection closed by peer");
  }
  // The client channel answers sends on its dead connection with the reason.
  auto err = send_frame(*n.sys, *ch, 1, 1, {});
  ASSERT_TRUE(err);
  EXPECT_NE(cleave::describe(err).find("closed"), std::string::npos) << cleave::describe(err);
}

TEST(BulkChannel, FrameIsSerialisable) {
  caf::actor_system_config cfg;
  add_transport_message_types(cfg);
  caf::actor_system sys{cfg};
  bulk_frame f{3, 44, 5, pattern(1000, 1)};
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(f));
  bulk_frame g;
  caf::binary_deserializer src{sys, buf};
  ASSERT_FALSE(src(g));
  EXPECT_EQ(g.kind, 3);
  EXPECT_EQ(g.tag, 44u);
  EXPECT_EQ(g.conn, 5u);
  EXPECT_TRUE(g.payload == f.payload);
  auto msg = caf::make_message(bulk_frame_atom::value, f);
  EXPECT_TRUE(msg.match_element<bulk_frame>(1));
}

}  // namespace
