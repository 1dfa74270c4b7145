// The device edge: its codec and rate limit directly, then the gateway on
// loopback: a device process's link joins through it and computes tiles
// equal to the local product, and hostile peers (no join, a slow join,
// results for tasks never sent, a flood) are refused, dropped and counted
// while the gateway keeps serving.

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <gtest/gtest.h>

#include "actors/detector/detector_actor.hpp"
#include "actors/device/device_actor.hpp"
#include "actors/device/edge_link.hpp"
#include "actors/gateway/edge_gateway.hpp"
#include "schema/errors.hpp"
#include "actors/gateway/rate_limit.hpp"
#include "actors/planner/planner_actor.hpp"
#include "actors/ps/engine/distributed_gemm.hpp"
#include "actors/transport/frame.hpp"
#include "kernels/random.hpp"
#include "schema/edge_codec.hpp"
#include "schema/tile_codec.hpp"
#include "tests/raw_client.hpp"
#include "tests/runtime_fixture.hpp"

using namespace cleave;
using namespace std::chrono_literals;

namespace {

// ---------------------------------------------------------------- pure parts

TEST(edge_codec, join_round_trip_and_caps) {
  edge_join_msg j{message_schema_version, *preset_profile("phone"), "tok-123", "-----BEGIN CERTIFICATE REQUEST-----", {}};
  auto b = encode(j);
  EXPECT_LE(b.size(), edge_payload_cap(edge_join, 0));
  auto back = decode_join(b.data(), b.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->profile.name, "phone");
  EXPECT_EQ(back->profile.memory_bytes, j.profile.memory_bytes);
  EXPECT_EQ(back->token, "tok-123");
  EXPECT_EQ(back->csr, j.csr);
  for (size_t cut = 0; cut < b.size(); ++cut) EXPECT_FALSE(decode_join(b.data(), cut)) << cut;
  b.push_back(0);
  EXPECT_FALSE(decode_join(b.data(), b.size())) << "trailing bytes";
  // A name length over the cap is refused before the name is read.
  std::vector<char> forged(4 + 2, 0);
  const uint16_t huge = 60000;
  std::memcpy(forged.data() + 4, &huge, 2);
  EXPECT_FALSE(decode_join(forged.data(), forged.size()));
}

TEST(edge_codec, a_relayed_join_names_a_relay_with_a_store) {
  edge_join_msg j{message_schema_version, *preset_profile("phone"), "", "",
                  relay_seat{"city-1", uint64_t{1} << 30, 1.25e9, 1.25e9, 1.25e10, 0.005}};
  auto b = encode(j);
  EXPECT_LE(b.size(), edge_payload_cap(edge_join, 0));
  auto back = decode_join(b.data(), b.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->relay.name, "city-1");
  EXPECT_EQ(back->relay.store_bytes, uint64_t{1} << 30);
  EXPECT_EQ(back->relay.fanout, 1.25e10);
  // A relay's seat is checked as a fleet file's relay is.
  for (auto spoil : {+[](relay_seat& r) { r.store_bytes = 0; }, +[](relay_seat& r) { r.downlink = 0; },
                     +[](relay_seat& r) { r.fanout = std::nan(""); }, +[](relay_seat& r) { r.latency = -1; }}) {
    auto bad = j;
    spoil(bad.relay);
    b = encode(bad);
    auto refused = decode_join(b.data(), b.size());
    ASSERT_FALSE(refused);
    EXPECT_NE(describe(refused.error()).find("join frame: relay 'city-1'"), std::string::npos) << describe(refused.error());
  }
  j.relay.name = std::string(max_relay_name + 1, 'x');
  b = encode(j);
  back = decode_join(b.data(), b.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->relay.name.size(), max_relay_name) << "a name is cut to its cap";
}

TEST(edge_codec, welcome_and_refusal) {
  auto w = encode(edge_welcome_msg{7, 0.25, "cert"});
  auto back = decode_welcome(w.data(), w.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->device, 7);
  EXPECT_DOUBLE_EQ(back->heartbeat_seconds, 0.25);
  EXPECT_EQ(back->certificate, "cert");
  auto bad = encode(edge_welcome_msg{7, -1, ""});
  EXPECT_FALSE(decode_welcome(bad.data(), bad.size()));
  auto r = encode_refusal(std::string(2000, 'x'));
  EXPECT_EQ(r.size(), 2 + max_reason_bytes) << "a reason is cut to its cap";
  auto reason = decode_refusal(r.data(), r.size());
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->size(), max_reason_bytes);
}

TEST(edge_codec, a_heartbeat_says_its_peak_memory_or_nothing) {
  auto h = encode_heartbeat(uint64_t{3} << 30);
  ASSERT_EQ(h.size(), heartbeat_payload_bytes);
  auto back = decode_heartbeat(h.data(), h.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, uint64_t{3} << 30);
  auto empty = decode_heartbeat(nullptr, 0);
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, 0u) << "a device that does not say";
  for (size_t cut = 1; cut < h.size(); ++cut) EXPECT_FALSE(decode_heartbeat(h.data(), cut)) << cut;
}

TEST(edge_codec, kinds_without_payload_are_capped_at_zero) {
  for (auto k : {edge_run_over, edge_leave}) EXPECT_EQ(edge_payload_cap(k, 1 << 20), 0u);
  EXPECT_EQ(edge_payload_cap(edge_heartbeat, 1 << 20), heartbeat_payload_bytes);
  EXPECT_EQ(edge_payload_cap(999, 1 << 20), 0u);
  EXPECT_EQ(edge_payload_cap(edge_result, 1 << 20), uint64_t{1} << 20);
  EXPECT_EQ(edge_payload_cap(edge_miss, 1 << 20), 28u);
}

TEST(rate_limiter, passes_a_burst_throttles_then_drops) {
  rate_limit_options o;
  o.frames_per_second = 100;
  o.burst_frames = 10;
  o.max_throttle_seconds = 0.5;
  rate_limiter r(o, 0.0);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.admit(0.0).verdict, rate_verdict::pass) << i;
  auto d = r.admit(0.0);
  EXPECT_EQ(d.verdict, rate_verdict::throttle);
  EXPECT_NEAR(d.delay_seconds, 0.01, 1e-9);
  for (int i = 0; i < 48; ++i) r.admit(0.0);
  EXPECT_EQ(r.admit(0.0).verdict, rate_verdict::throttle);  // 50 frames ahead: 0.5 s
  EXPECT_EQ(r.admit(0.0).verdict, rate_verdict::drop);
}

TEST(rate_limiter, a_device_within_its_rate_always_passes) {
  rate_limit_options o;
  o.frames_per_second = 100;
  o.burst_frames = 5;
  rate_limiter r(o, 0.0);
  for (int i = 1; i <= 1000; ++i) ASSERT_EQ(r.admit(i * 0.011).verdict, rate_verdict::pass) << i;
}

// ------------------------------------------------------------- the gateway

struct config : caf::actor_system_config {
  config() {
    add_cleave_message_types(*this);
    add_planner_message_types(*this);
    add_gateway_message_types(*this);
    transport::add_transport_message_types(*this);
    load<caf::io::middleman>();
  }
};

class edge : public ::testing::Test {
 protected:
  void SetUp() override {
    detector = sys.spawn(detector_actor, detector_options{});
    planner = sys.spawn(planner_actor, runtime_testing::splitting_planner(), detector);
  }
  void open(edge_options eo = {}) {
    auto p = planner;
    eo.planner = [p] { return p; };
    gateway = sys.spawn(edge_gateway, eo);
    auto lst = transport::spawn_bulk_listener(sys, 0, gateway, edge_channel_options(eo));
    ASSERT_TRUE(lst) << sys.render(lst.error());
    listener = lst->channel;
    port = lst->port;
  }
  void TearDown() override {
    for (auto& a : {listener, gateway, planner, caf::actor_cast<caf::actor>(detector)})
      if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  // A device as a device process runs one: its actor behind an edge link.
  caf::actor remote_device() {
    edge_link_options lo;
    lo.host = "127.0.0.1";
    lo.port = port;
    auto link = connect_edge(sys, lo);
    EXPECT_TRUE(link);
    device_options o;
    o.profile = *preset_profile("fast");
    o.paced = false;
    auto dev = sys.spawn(device_actor, o, *link);
    devices.push_back(dev);
    return *link;
  }
  size_t fleet_size() {
    caf::scoped_actor self{sys};
    size_t n = 0;
    self->request(planner, 5s, caf::get_atom::value)
      .receive([&](uint64_t, bool, std::vector<fleet_member>& m, std::vector<int32_t>&,
                   std::vector<int32_t>&) { n = m.size(); },
               [](caf::error&) {});
    return n;
  }
  bool wait_for(const std::function<bool()>& ok, std::chrono::milliseconds limit = 10s) {
    for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
      if (ok()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return ok();
  }
  edge_counters counters() {
    caf::scoped_actor self{sys};
    edge_counters c;
    self->request(gateway, 5s, caf::get_atom::value).receive([&](edge_counters& got) { c = got; },
                                                              [](caf::error&) {});
    return c;
  }

  config cfg;
  caf::actor_system sys{cfg};
  detector_handle detector;
  caf::actor planner, gateway, listener;
  uint16_t port = 0;
  std::vector<caf::actor> devices;
};

tensor random_matrix(int64_t r, int64_t c, uint64_t seed) {
  tensor t(r, c);
  rng g(seed);
  fill_normal(t, 1.0, g);
  return t;
}

// A raw peer that speaks the channel's framing by hand.
struct peer : cleave::testing::raw_client {
  explicit peer(uint16_t port) : raw_client(port, 5) {
    auto h = transport::encode_header({transport::kind_hello, transport::hello_payload_size, 0});
    auto p = transport::encode_hello(transport::hello{uint64_t{1} << 30, transport::default_max_payload});
    write_all(h.data(), h.size());
    write_all(p.data(), p.size());
  }
  void frame(uint16_t kind, const std::vector<char>& payload) {
    auto h = transport::encode_header({kind, payload.size(), 0});
    write_all(h.data(), h.size());
    write_all(payload.data(), payload.size());
  }
  // The next frame that is not the channel's own; kind 0 when the server closed.
  std::pair<uint16_t, std::vector<char>> next() {
    for (;;) {
      std::array<char, transport::frame_header_size> h{};
      if (!read_exact(h.data(), h.size())) return {0, {}};
      auto hdr = transport::decode_header(h.data(), h.size(), transport::default_max_payload);
      if (!hdr) return {0, {}};
      std::vector<char> payload(hdr->length);
      if (!read_exact(payload.data(), payload.size())) return {0, {}};
      if (hdr->kind < transport::first_reserved_kind) return {hdr->kind, std::move(payload)};
    }
  }
  void join() { frame(edge_join, encode(edge_join_msg{message_schema_version, *preset_profile("fast"), "", ""})); }
};

TEST_F(edge, a_device_process_joins_and_its_tiles_equal_the_local_product) {
  open();
  for (int i = 0; i < 3; ++i) remote_device();
  ASSERT_TRUE(wait_for([&] { return fleet_size() == 3; })) << "the devices did not join through the edge";
  engine_options eo;
  eo.schedule.tile_timeout_seconds = 10;
  distributed_gemm eng(sys, planner, eo);
  ASSERT_FALSE(eng.begin_step(1));
  const tensor x = random_matrix(96, 80, 1), w = random_matrix(80, 64, 2), dy = random_matrix(96, 64, 3);
  tensor y(96, 64), y_ref(96, 64), dw(80, 64), dw_ref(80, 64);
  eng.gemm({0, gemm_role::forward}, x.view(), false, w.view(), false, y.view(), 0.0f);
  eng.gemm({0, gemm_role::grad_weight}, x.view(), true, dy.view(), false, dw.view(), 0.0f);
  gemm_local<float>(x.view(), false, w.view(), false, y_ref.view(), 0.0f);
  gemm_local<float>(x.view(), true, dy.view(), false, dw_ref.view(), 0.0f);
  for (auto [got, want] : {std::pair{&y, &y_ref}, {&dw, &dw_ref}})
    for (int64_t i = 0; i < got->size(); ++i) ASSERT_NEAR((*got)[i], (*want)[i], 1e-5 * (1 + std::abs((*want)[i])));
  const auto acc = eng.accounts();
  EXPECT_GT(acc.tiles, 0u) << "nothing was distributed: the test proves nothing";
  EXPECT_EQ(acc.churn.tiles_at_ps + acc.churn.tiles_timed_out, 0u) << "tiles did not cross the edge";
  EXPECT_EQ(acc.refused, 0u);
  EXPECT_EQ(counters().admitted, 3u);
}

TEST_F(edge, a_closed_connection_makes_the_device_dead) {
  open();
  auto link = remote_device();
  ASSERT_TRUE(wait_for([&] { return fleet_size() == 1; }));
  caf::anon_send_exit(link, caf::exit_reason::kill);  // the device process vanishes
  EXPECT_TRUE(wait_for([&] { return fleet_size() == 0; })) << "the planner still lists a device whose link is gone";
}

TEST_F(edge, only_a_valid_join_opens_the_door) {
  open();
  {  // any other first frame closes the connection before its payload is read
    peer p(port);
    auto h = transport::encode_header({edge_result, 1 << 20, 0});
    p.write_all(h.data(), h.size());
    EXPECT_TRUE(p.sees_close());
  }
  peer q(port);  // a join in another schema version is refused with the reason
  q.frame(edge_join, encode(edge_join_msg{message_schema_version + 1, *preset_profile("fast"), "", ""}));
  auto [kind, payload] = q.next();
  ASSERT_EQ(kind, edge_refused);
  auto reason = decode_refusal(payload.data(), payload.size());
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("schema version"), std::string::npos) << *reason;
  EXPECT_TRUE(q.sees_close());
  peer r(port);  // and so is a profile that makes no sense
  auto liar = *preset_profile("fast");
  liar.flops = -1;
  r.frame(edge_join, encode(edge_join_msg{message_schema_version, liar, "", ""}));
  EXPECT_EQ(r.next().first, edge_refused);
  EXPECT_EQ(counters().refused, 2u);
  EXPECT_EQ(fleet_size(), 0u);
}

TEST_F(edge, a_connection_that_never_joins_is_closed_after_the_handshake_timeout) {
  edge_options eo;
  eo.handshake_timeout = 300ms;
  open(eo);
  peer p(port);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(p.sees_close());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(counters().handshake_timeouts, 1u);
}

TEST_F(edge, results_for_tasks_never_sent_drop_the_device) {
  edge_options eo;
  eo.max_strikes = 8;
  open(eo);
  peer p(port);
  p.join();
  ASSERT_EQ(p.next().first, edge_welcome);
  ASSERT_TRUE(wait_for([&] { return fleet_size() == 1; }));
  tile_result forged;
  forged.rows = forged.cols = 4;
  forged.data.assign(16, 1.0f);
  for (uint32_t t = 0; t < 20; ++t) {
    forged.key = tile_key{1, 0, t};
    std::vector<char> b(encoded_size(forged));
    encode(forged, b.data());
    p.frame(edge_result, b);
  }
  EXPECT_TRUE(p.sees_close());
  EXPECT_TRUE(wait_for([&] { return fleet_size() == 0; }));
  EXPECT_EQ(counters().dropped_misbehaving, 1u);
}

TEST_F(edge, a_flooding_device_is_throttled_then_dropped_and_others_are_served) {
  edge_options eo;
  eo.rate.frames_per_second = 50;
  eo.rate.burst_frames = 20;
  eo.rate.max_throttle_seconds = 1;
  open(eo);
  peer flood(port);
  flood.join();
  ASSERT_EQ(flood.next().first, edge_welcome);
  for (int i = 0; i < 400; ++i) flood.frame(edge_heartbeat, {});
  EXPECT_TRUE(flood.sees_close());
  const auto c = counters();
  EXPECT_EQ(c.dropped_flooding, 1u);
  EXPECT_GT(c.throttled_frames, 0u);
  peer calm(port);
  calm.join();
  EXPECT_EQ(calm.next().first, edge_welcome) << "the gateway stopped serving after a flood";
}

TEST_F(edge, a_heartbeat_of_the_wrong_length_closes_the_connection) {
  open();
  peer p(port);
  p.join();
  ASSERT_EQ(p.next().first, edge_welcome);
  ASSERT_TRUE(wait_for([&] { return fleet_size() == 1; }));
  p.frame(edge_heartbeat, encode_heartbeat(1 << 20));  // well formed: kept
  p.frame(edge_heartbeat, std::vector<char>(3, 0));
  EXPECT_TRUE(p.sees_close());
  EXPECT_EQ(counters().dropped_misbehaving, 1u);
}

TEST_F(edge, a_frame_over_its_kinds_cap_closes_before_the_payload_is_read) {
  open();
  peer p(port);
  p.join();
  ASSERT_EQ(p.next().first, edge_welcome);
  auto h = transport::encode_header({edge_heartbeat, 1 << 20, 0});  // a heartbeat carries 8 bytes at most
  p.write_all(h.data(), h.size());
  EXPECT_TRUE(p.sees_close());
}

}  // namespace
