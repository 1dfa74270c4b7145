// tls_pipe: a connection's TLS work on the crypto pool, two endpoints back
// to back in memory. Sealed frames come back in posting order and decrypt in
// that order on the other side; a pipe destroyed while its job runs leaves
// that job to finish on what it shares; a corrupt record comes back as an
// error value, and so does sealing on a failed session.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "actors/transport/tls_pipe.hpp"
#include "schema/errors.hpp"
#include "tests/completion_count.hpp"
#include "tests/tls_fixture.hpp"

using namespace cleave;
using namespace cleave::transport;
using namespace cleave::transport::detail;
using namespace std::chrono_literals;
using cleave::testing::completion_count;

namespace {

const cleave::testing::test_pki& pki() {
  static cleave::testing::test_pki p;
  return p;
}

std::shared_ptr<const tls_context> ctx(const tls_files& f, tls_side side) {
  auto c = make_tls_context(f, side);
  EXPECT_TRUE(c) << (c ? "" : describe(c.error()));
  return c ? *c : nullptr;
}

// Result of a posted job, waiting for its notify.
tls_result next(tls_pipe& p, completion_count& s, size_t& taken) {
  EXPECT_TRUE(s.wait_for(++taken));
  auto r = p.take();
  EXPECT_TRUE(r);
  return r ? std::move(*r) : tls_result{};
}

std::vector<char> drain(tls_pipe& p) {
  std::vector<char> out;
  p.session().drain(out);
  return out;
}

// Runs the handshake inline through both pipes.
void handshake(tls_pipe& client, tls_pipe& server) {
  std::vector<char> scratch(1);
  for (int i = 0; i < 10 && !(client.session().handshake_done() && server.session().handshake_done()); ++i) {
    std::deque<std::vector<char>> to_server{drain(client)};
    auto r = server.open(std::move(to_server), std::move(scratch), 0, 1, true);
    ASSERT_FALSE(r->err) << describe(r->err);
    scratch = std::move(r->unit);
    std::deque<std::vector<char>> to_client{r->wire};
    auto c = client.open(std::move(to_client), std::move(scratch), 0, 1, true);
    ASSERT_FALSE(c->err) << describe(c->err);
    scratch = std::move(c->unit);
    // Whatever the client has to say after the server's flight.
    std::deque<std::vector<char>> more{c->wire, drain(client)};
    auto s2 = server.open(std::move(more), std::move(scratch), 0, 1, true);
    ASSERT_FALSE(s2->err) << describe(s2->err);
    scratch = std::move(s2->unit);
  }
  ASSERT_TRUE(client.session().handshake_done());
  ASSERT_TRUE(server.session().handshake_done());
}

struct pair_fixture {
  std::shared_ptr<crypto_pool> pool = crypto_pool::make(2);
  completion_count cs, ss;
  tls_pipe client{ctx(pki().device_files("dev1"), tls_side::client), "127.0.0.1", pool, cs.callback()};
  tls_pipe server{ctx(pki().server_files(), tls_side::server), "", pool, ss.callback()};
};

std::vector<char> pattern(size_t n, unsigned seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + seed * 7) & 0xff);
  return v;
}

TEST(TlsPipe, SealedInPostingOrderAndOpenedInOrderOnThePool) {
  pair_fixture f;
  handshake(f.client, f.server);
  // Frames of mixed size and buffer kind, all posted before any result is taken.
  std::vector<std::vector<char>> frames;
  for (unsigned i = 0; i < 12; ++i) frames.push_back(pattern(i % 3 == 0 ? (size_t{1} << 20) + i : 100 + i, i));
  for (unsigned i = 0; i < frames.size(); ++i) {
    seal_input in;
    in.head = {'h', static_cast<char>(i)};
    if (i % 2 == 0) {
      bulk_buffer b(frames[i].size());
      std::copy(frames[i].begin(), frames[i].end(), b.payload());
      // A bulk_buffer's whole storage is sealed: blank its header room.
      std::fill(b.storage().begin(), b.storage().begin() + frame_header_size, 0);
      in.body = std::move(b);
    } else {
      in.body = frames[i];
    }
    in.frame = true;
    EXPECT_FALSE(f.client.seal(std::move(in), {}, false));
  }
  EXPECT_EQ(f.client.outstanding(), frames.size());
  EXPECT_FALSE(f.client.idle());
  std::deque<std::vector<char>> wire;
  size_t taken = 0, expected_bytes = 0;
  for (unsigned i = 0; i < frames.size(); ++i) {
    auto r = next(f.client, f.cs, taken);
    ASSERT_TRUE(r.sealed);
    ASSERT_FALSE(r.err) << describe(r.err);
    EXPECT_EQ(body_size(r.input.body), frames[i].size() + (i % 2 == 0 ? frame_header_size : 0));
    EXPECT_EQ(r.input.head[1], static_cast<char>(i));
    wire.push_back(std::move(r.wire));
    expected_bytes += 2 + body_size(r.input.body);
  }
  EXPECT_TRUE(f.client.idle());
  // One unit for everything, filled by jobs on the pool.
  std::vector<char> unit(expected_bytes);
  size_t have = 0, staken = 0;
  for (int guard = 0; have < expected_bytes && guard < 100; ++guard) {
    EXPECT_FALSE(f.server.open(std::move(wire), std::move(unit), have, expected_bytes, false));
    wire.clear();
    auto r = next(f.server, f.ss, staken);
    ASSERT_FALSE(r.sealed);
    ASSERT_FALSE(r.err) << describe(r.err);
    unit = std::move(r.unit);
    have = r.have;
  }
  ASSERT_EQ(have, expected_bytes);
  size_t at = 0;
  for (unsigned i = 0; i < frames.size(); ++i) {
    ASSERT_EQ(unit[at], 'h');
    ASSERT_EQ(unit[at + 1], static_cast<char>(i)) << "frame " << i << " out of order";
    at += 2 + (i % 2 == 0 ? frame_header_size : 0);
    ASSERT_TRUE(std::equal(frames[i].begin(), frames[i].end(), unit.begin() + at)) << "frame " << i;
    at += frames[i].size();
  }
}

TEST(TlsPipe, UnitFilledStopsAndTheRestStaysForTheNextUnit) {
  pair_fixture f;
  handshake(f.client, f.server);
  auto msg = pattern(50000, 3);
  seal_input in;
  in.body = msg;
  auto r = f.client.seal(std::move(in), {}, true);
  ASSERT_FALSE(r->err);
  // A 24-byte unit first, as the state machine asks for a header.
  std::deque<std::vector<char>> wire{std::move(r->wire)};
  auto h = f.server.open(std::move(wire), std::vector<char>(24), 0, 24, true);
  ASSERT_FALSE(h->err);
  ASSERT_EQ(h->have, 24u);
  EXPECT_GT(h->buffered, 0u);  // ciphertext left for the next unit
  EXPECT_TRUE(std::equal(msg.begin(), msg.begin() + 24, h->unit.begin()));
  // The rest with no new ciphertext: part of it is plaintext inside the session.
  EXPECT_FALSE(f.server.open({}, std::vector<char>(msg.size() - 24), 0, msg.size() - 24, false));
  size_t taken = 0;
  auto rest = next(f.server, f.ss, taken);
  ASSERT_FALSE(rest.err) << describe(rest.err);
  ASSERT_EQ(rest.have, msg.size() - 24);
  EXPECT_TRUE(std::equal(msg.begin() + 24, msg.end(), rest.unit.begin()));
  EXPECT_EQ(rest.buffered, 0u);
}

// Ciphertext read while a decryption runs goes to that job; whatever it did
// not take comes back from take_arrived(), in order, so nothing is lost
// whichever side of the job's end it lands on.
TEST(TlsPipe, CiphertextArrivingDuringADecryptionIsTakenOrHandedBack) {
  pair_fixture f;
  handshake(f.client, f.server);
  auto msg = pattern(size_t{6} << 20, 4);
  seal_input in;
  in.body = msg;
  auto r = f.client.seal(std::move(in), {}, true);
  ASSERT_FALSE(r->err);
  // Cut into socket-sized reads; the first goes with the job, the rest arrive.
  std::vector<std::vector<char>> reads;
  for (size_t at = 0; at < r->wire.size(); at += 256 << 10)
    reads.emplace_back(r->wire.begin() + at, r->wire.begin() + std::min(r->wire.size(), at + (256 << 10)));
  std::deque<std::vector<char>> first{std::move(reads[0])};
  std::vector<char> unit(msg.size());
  size_t have = 0, taken = 0;
  EXPECT_FALSE(f.server.open(std::move(first), std::move(unit), 0, msg.size(), false));
  for (size_t i = 1; i < reads.size(); ++i) f.server.arrived(std::move(reads[i]));
  for (int guard = 0; guard < 100; ++guard) {
    auto o = next(f.server, f.ss, taken);
    ASSERT_FALSE(o.err) << describe(o.err);
    unit = std::move(o.unit);
    have = o.have;
    if (have == msg.size()) break;
    std::deque<std::vector<char>> rest;
    f.server.take_arrived(rest);
    EXPECT_FALSE(f.server.open(std::move(rest), std::move(unit), have, msg.size(), false));
  }
  ASSERT_EQ(have, msg.size());
  EXPECT_TRUE(unit == msg);
  std::deque<std::vector<char>> none;
  EXPECT_EQ(f.server.take_arrived(none), 0u);
  // Read buffers it finished with come back for reuse.
  EXPECT_GT(f.server.spare().capacity(), 0u);
}

// A small read is decrypted from the caller's buffer (CAF's, reused for the
// next read): what the unit did not take is copied, never kept borrowed.
TEST(TlsPipe, ASmallReadInPlaceKeepsNothingBorrowedAndTrimFreesSpares) {
  pair_fixture f;
  handshake(f.client, f.server);
  auto msg = pattern(20000, 6);  // two records: the second stays ciphertext
  seal_input in;
  in.body = msg;
  auto r = f.client.seal(std::move(in), {}, true);
  ASSERT_FALSE(r->err);
  auto read = r->wire;
  auto h = f.server.open_in_place(read.data(), read.size(), std::vector<char>(24), 0, 24);
  ASSERT_FALSE(h.err);
  ASSERT_EQ(h.have, 24u);
  EXPECT_GT(h.buffered, 0u);
  std::fill(read.begin(), read.end(), 'Z');  // CAF reads the next bytes into it
  auto rest = f.server.open({}, std::vector<char>(msg.size() - 24), 0, msg.size() - 24, true);
  ASSERT_FALSE(rest->err) << describe(rest->err);
  ASSERT_EQ(rest->have, msg.size() - 24);
  EXPECT_TRUE(std::equal(msg.begin(), msg.begin() + 24, h.unit.begin()));
  EXPECT_TRUE(std::equal(msg.begin() + 24, msg.end(), rest->unit.begin()));
  f.server.trim();
  EXPECT_EQ(f.server.spare().capacity(), 0u);
}

TEST(TlsPipe, DestroyedWhileItsJobRunsTheJobFinishesAndLaterOnesNeverRun) {
  auto pool = crypto_pool::make(1);
  completion_count cs, ss;
  auto notified = std::make_shared<std::atomic<int>>(0);
  auto client = std::make_unique<tls_pipe>(ctx(pki().device_files("dev1"), tls_side::client), "127.0.0.1", pool,
                                           [notified] { ++*notified; });
  tls_pipe server{ctx(pki().server_files(), tls_side::server), "", pool, ss.callback()};
  handshake(*client, server);
  // Hold the pool's only thread so the seals queue up behind a running job.
  std::promise<void> started, release;
  auto blocker = pool->make_strand();
  auto go = release.get_future();
  blocker->post([&] {
    started.set_value();
    go.wait();
  });
  started.get_future().wait();
  for (int i = 0; i < 3; ++i) {
    seal_input in;
    in.body = pattern(size_t{8} << 20, i);
    client->seal(std::move(in), {}, false);
  }
  client.reset();  // the connection closes with three seals queued
  release.set_value();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(notified->load(), 0);  // cancelled: none ran

  // Now with one running: it finishes on the engine it shares.
  client = std::make_unique<tls_pipe>(ctx(pki().device_files("dev1"), tls_side::client), "127.0.0.1", pool,
                                      [notified] { ++*notified; });
  tls_pipe server2{ctx(pki().server_files(), tls_side::server), "", pool, ss.callback()};
  handshake(*client, server2);
  // Both made before either is sealed, so the second queues behind the
  // first: making a body takes longer than sealing one.
  std::vector<seal_input> inputs(2);
  for (int i = 0; i < 2; ++i) inputs[static_cast<size_t>(i)].body = pattern(size_t{64} << 20, i);
  for (auto& in : inputs) client->seal(std::move(in), {}, false);  // long enough to be mid-job below
  std::this_thread::sleep_for(5ms);  // the first is running by now (64 MiB takes tens of ms)
  client.reset();
  for (int i = 0; i < 500 && notified->load() == 0; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(100ms);
  EXPECT_LE(notified->load(), 1);  // at most the one that was running
}

TEST(TlsPipe, ACorruptRecordIsAnErrorValueAndTheSessionStaysFailed) {
  pair_fixture f;
  handshake(f.client, f.server);
  seal_input in;
  in.body = pattern(100000, 9);
  auto r = f.client.seal(std::move(in), {}, true);
  ASSERT_FALSE(r->err);
  r->wire[r->wire.size() / 2] ^= 0x5a;
  std::deque<std::vector<char>> wire{std::move(r->wire)};
  EXPECT_FALSE(f.server.open(std::move(wire), std::vector<char>(100000), 0, 100000, false));
  size_t taken = 0;
  auto o = next(f.server, f.ss, taken);
  ASSERT_TRUE(o.err);
  EXPECT_NE(describe(o.err).find("TLS"), std::string::npos) << describe(o.err);
  EXPECT_LT(o.have, size_t{100000});
  // The failed session refuses further work, as a value too.
  seal_input again;
  again.head = {'x'};
  EXPECT_FALSE(f.server.seal(std::move(again), {}, false));
  auto s = next(f.server, f.ss, taken);
  EXPECT_TRUE(s.err);
}

TEST(TlsPipe, WithoutAPoolEverythingRunsInline) {
  completion_count cs, ss;
  tls_pipe client{ctx(pki().device_files("dev1"), tls_side::client), "127.0.0.1", nullptr, cs.callback()};
  tls_pipe server{ctx(pki().server_files(), tls_side::server), "", nullptr, ss.callback()};
  EXPECT_FALSE(client.offloads());
  handshake(client, server);
  seal_input in;
  in.body = pattern(70000, 1);
  auto r = client.seal(std::move(in), {}, false);  // asked to post, but there is no pool
  ASSERT_TRUE(r);
  std::deque<std::vector<char>> wire{std::move(r->wire)};
  auto o = server.open(std::move(wire), std::vector<char>(70000), 0, 70000, false);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->have, 70000u);
  EXPECT_EQ(cs.count() + ss.count(), 0u);
}

}  // namespace
