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
#include "schema/edge_relay_codec.hpp"
#include "schema/tile_codec.hpp"
#include "tests/edge_fixture.hpp"

using namespace cleave;
using namespace std::chrono_literals;
using namespace cleave::edge_testing;

namespace {

// ---------------------------------------------------------------- pure parts

TEST(edge_codec, join_round_trip_and_caps) {
  edge_join_msg j{message_schema_version, *preset_profile("phone"), "tok-123", "-----BEGIN CERTIFICATE REQUEST-----"};
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

TEST(edge_codec, a_relay_hello_names_a_relay_with_a_store) {
  edge_relay_hello_msg h{message_schema_version, relay_seat{"city-1", uint64_t{1} << 30, 1.25e9, 1.25e9, 1.25e10, 0.005}};
  auto b = encode(h);
  EXPECT_LE(b.size(), edge_payload_cap(edge_relay_hello, 0));
  auto back = decode_relay_hello(b.data(), b.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->seat.name, "city-1");
  EXPECT_EQ(back->seat.store_bytes, uint64_t{1} << 30);
  EXPECT_EQ(back->seat.fanout, 1.25e10);
  for (size_t cut = 0; cut < b.size(); ++cut) EXPECT_FALSE(decode_relay_hello(b.data(), cut)) << cut;
  // A relay's seat is checked as a fleet file's relay is.
  for (auto spoil : {+[](relay_seat& r) { r.store_bytes = 0; }, +[](relay_seat& r) { r.downlink = 0; },
                     +[](relay_seat& r) { r.fanout = std::nan(""); }, +[](relay_seat& r) { r.latency = -1; }}) {
    auto bad = h;
    spoil(bad.seat);
    b = encode(bad);
    auto refused = decode_relay_hello(b.data(), b.size());
    ASSERT_FALSE(refused);
    EXPECT_NE(describe(refused.error()).find("relay hello: relay 'city-1'"), std::string::npos) << describe(refused.error());
  }
  auto nameless = h;
  nameless.seat.name.clear();
  b = encode(nameless);
  EXPECT_FALSE(decode_relay_hello(b.data(), b.size())) << "a relay without a name";
  h.seat.name = std::string(max_relay_name + 1, 'x');
  b = encode(h);
  back = decode_relay_hello(b.data(), b.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->seat.name.size(), max_relay_name) << "a name is cut to its cap";
}

TEST(edge_codec, a_route_travels_after_the_payload_and_is_checked) {
  std::vector<char> payload(100, 'p');
  append_route(payload, {7, edge_result, 0x1122334455667788ull});
  ASSERT_EQ(payload.size(), 100 + edge_route_bytes);
  auto route = take_route(payload, 1 << 20);
  ASSERT_TRUE(route) << describe(route.error());
  EXPECT_EQ(route->session, 7u);
  EXPECT_EQ(route->kind, edge_result);
  EXPECT_EQ(route->tag, 0x1122334455667788ull);
  EXPECT_EQ(payload, std::vector<char>(100, 'p')) << "the payload is left as the device's frame's own";

  auto refused = [](std::vector<char> p, const std::string& why) {
    auto r = take_route(p, 1 << 20);
    ASSERT_FALSE(r) << why;
    EXPECT_NE(describe(r.error()).find(why), std::string::npos) << describe(r.error());
  };
  refused(std::vector<char>(edge_route_bytes - 1), "shorter than its route");
  auto routed = [](size_t bytes, edge_route r) {
    std::vector<char> p(bytes);
    append_route(p, r);
    return p;
  };
  refused(routed(0, {0, edge_heartbeat, 0}), "session 0");
  for (uint16_t inner : {uint16_t{edge_routed}, uint16_t{edge_relay_hello}, uint16_t{0}, uint16_t{99}})
    refused(routed(0, {1, inner, 0}), "a frame of kind " + std::to_string(inner) + " inside");
  refused(routed(9, {1, edge_heartbeat, 0}), "a heartbeat frame of 9 bytes, over its cap of 8");
  refused(routed(1, {1, edge_leave, 0}), "a leave frame of 1 bytes");
  refused(routed((1 << 20) + 1, {1, edge_task, 0}), "a task frame of 1048577 bytes");
  refused(routed(0, {1, edge_leave, 0, route_uncertified}), "flags 1 on a leave");
  refused(routed(0, {1, edge_join, 0, 2}), "flags 2 on a join");
  auto uncertified = routed(0, {1, edge_join, 0, route_uncertified});
  auto join = take_route(uncertified, 1 << 20);
  ASSERT_TRUE(join);
  EXPECT_EQ(join->flags, route_uncertified);
  EXPECT_TRUE(routable(edge_closed));
  EXPECT_EQ(edge_payload_cap(edge_routed, 1 << 20), (uint64_t{1} << 20) + edge_route_bytes);
}

TEST(edge_codec, welcome_and_refusal) {
  auto w = encode(edge_welcome_msg{7, 0.25, "cert", {}, ""});
  auto back = decode_welcome(w.data(), w.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->device, 7);
  EXPECT_DOUBLE_EQ(back->heartbeat_seconds, 0.25);
  EXPECT_EQ(back->certificate, "cert");
  auto bad = encode(edge_welcome_msg{7, -1, "", {}, ""});
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

tensor random_matrix(int64_t r, int64_t c, uint64_t seed) {
  tensor t(r, c);
  rng g(seed);
  fill_normal(t, 1.0, g);
  return t;
}

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
  const auto reason = q.next_refusal();
  EXPECT_NE(reason.find("schema version"), std::string::npos) << reason;
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
  for (uint32_t t = 0; t < 20; ++t) p.frame(edge_result, forged_result(t));
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
