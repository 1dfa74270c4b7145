// A relay's one connection at the ps's edge: its hello, its devices as
// sessions with proxies of their own, and what ends a session (a leave, a
// refused join, strikes, silence, the cap) or the whole connection (a
// malformed route, a frame outside any session).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/edge_codec.hpp"
#include "schema/edge_relay_codec.hpp"
#include "schema/errors.hpp"
#include "schema/tile_codec.hpp"
#include "tests/edge_fixture.hpp"

using namespace cleave;
using namespace cleave::edge_testing;
using namespace std::chrono_literals;

namespace {

relay_seat seat_named(const std::string& name) { return relay_seat{name, uint64_t{1} << 30, 1e9, 1e9, 1e10, 0.005}; }

std::vector<char> join_payload(uint32_t version = message_schema_version) {
  return encode(edge_join_msg{version, *preset_profile("fast"), "", ""});
}

struct routed_frame {
  edge_route route;  // route.kind 0: not routed (or the connection closed)
  uint16_t kind = 0;  // the frame's own kind on the wire
  std::vector<char> payload;
};

// A relay played by hand: its hello, then its devices' frames with routes.
struct relay_peer : peer {
  relay_peer(uint16_t port, const std::string& name) : peer(port) {
    frame(edge_relay_hello, encode(edge_relay_hello_msg{message_schema_version, seat_named(name)}));
  }
  void routed(uint32_t session, uint16_t kind, std::vector<char> payload = {}, uint64_t tag = 0, uint16_t flags = 0) {
    append_route(payload, {session, kind, tag, flags});
    frame(edge_routed, payload);
  }
  routed_frame next_routed() {
    auto [kind, payload] = next();
    routed_frame f{{}, kind, std::move(payload)};
    if (kind == edge_routed) {
      auto route = take_route(f.payload, transport::default_max_payload);
      EXPECT_TRUE(route) << describe(route.error());
      if (route) f.route = *route;
    }
    return f;
  }
  // The next routed frame of `session`, skipping other sessions'.
  routed_frame next_of(uint32_t session) {
    for (;;) {
      auto f = next_routed();
      if (f.kind != edge_routed || f.route.session == session) return f;
    }
  }
};

std::string reason_of(const routed_frame& f) {
  auto r = decode_refusal(f.payload.data(), f.payload.size());
  return r ? *r : describe(r.error());
}

class edge_relay : public edge {
 protected:
  std::vector<fleet_member> members() {
    caf::scoped_actor self{sys};
    std::vector<fleet_member> out;
    self->request(planner, 5s, caf::get_atom::value)
      .receive([&](uint64_t, bool, std::vector<fleet_member>& m, std::vector<int32_t>&,
                   std::vector<int32_t>&) { out = std::move(m); },
               [](caf::error&) {});
    return out;
  }
};

}  // namespace

TEST_F(edge_relay, a_relay_carries_its_devices_on_one_connection) {
  open();
  relay_peer r(port, "r1");
  r.routed(1, edge_join, join_payload());
  r.routed(2, edge_join, join_payload());
  std::vector<uint32_t> welcomed;
  for (int i = 0; i < 2; ++i) {
    auto f = r.next_routed();
    ASSERT_EQ(f.kind, edge_routed);
    EXPECT_EQ(f.route.kind, edge_welcome);
    auto w = decode_welcome(f.payload.data(), f.payload.size());
    ASSERT_TRUE(w) << describe(w.error());
    welcomed.push_back(f.route.session);
  }
  std::sort(welcomed.begin(), welcomed.end());
  EXPECT_EQ(welcomed, (std::vector<uint32_t>{1, 2}));
  ASSERT_TRUE(wait_for([&] { return fleet_size() == 2; }));
  for (const auto& m : members()) {
    EXPECT_EQ(m.relay.name, "r1") << "the planner sees the relay its devices joined through";
    EXPECT_EQ(m.relay.store_bytes, uint64_t{1} << 30);
  }
  auto c = counters();
  EXPECT_EQ(c.connections, 1u);
  EXPECT_EQ(c.relays, 1u);
  EXPECT_EQ(c.admitted, 2u);
  r.routed(1, edge_heartbeat, encode_heartbeat(1 << 20));
  r.routed(1, edge_leave);
  EXPECT_TRUE(wait_for([&] { return fleet_size() == 1; })) << "a leave ends only its session";
  ::shutdown(r.fd, SHUT_RDWR);
  EXPECT_TRUE(wait_for([&] { return fleet_size() == 0; })) << "a relay's lost connection ends its devices";
}

TEST_F(edge_relay, a_relays_hello_is_checked_and_its_name_is_its_own) {
  open();
  relay_peer first(port, "r1");
  first.routed(1, edge_join, join_payload());
  ASSERT_EQ(first.next_routed().route.kind, edge_welcome);
  relay_peer twin(port, "r1");
  const auto reason = twin.next_refusal();
  EXPECT_NE(reason.find("a relay named 'r1' is connected already"), std::string::npos) << reason;
  EXPECT_TRUE(twin.sees_close());
  peer nameless(port);
  nameless.frame(edge_relay_hello, encode(edge_relay_hello_msg{message_schema_version, seat_named("")}));
  EXPECT_EQ(nameless.next().first, edge_refused);
  EXPECT_TRUE(nameless.sees_close());
  EXPECT_EQ(counters().relays, 1u);
}

TEST_F(edge_relay, a_sessions_join_is_checked_and_a_bad_one_closes_only_it) {
  open();
  relay_peer r(port, "r1");
  r.routed(5, edge_join, join_payload(message_schema_version + 1));
  auto refused = r.next_of(5);
  EXPECT_EQ(refused.route.kind, edge_refused);
  EXPECT_NE(reason_of(refused).find("schema version"), std::string::npos) << reason_of(refused);
  auto closed = r.next_of(5);
  EXPECT_EQ(closed.route.kind, edge_closed);
  r.routed(6, edge_join, join_payload());
  EXPECT_EQ(r.next_of(6).route.kind, edge_welcome) << "the relay's connection outlives a refused session";
  r.routed(6, edge_join, join_payload());
  auto again = r.next_of(6);
  EXPECT_EQ(again.route.kind, edge_closed);
  EXPECT_NE(reason_of(again).find("a second join"), std::string::npos) << reason_of(again);
  EXPECT_TRUE(wait_for([&] { return fleet_size() == 0; }));
  // Frames of a session nobody opened are stale, not an offence.
  r.routed(77, edge_heartbeat, encode_heartbeat(1));
  r.routed(8, edge_join, join_payload());
  EXPECT_EQ(r.next_of(8).route.kind, edge_welcome);
}

TEST_F(edge_relay, a_device_without_a_certificate_needs_a_ps_that_takes_join_tokens) {
  open();
  relay_peer r(port, "r1");
  r.routed(1, edge_join, join_payload(), 0, route_uncertified);
  auto refused = r.next_of(1);
  EXPECT_EQ(refused.route.kind, edge_refused);
  EXPECT_NE(reason_of(refused).find("it takes no join tokens"), std::string::npos) << reason_of(refused);
  EXPECT_EQ(r.next_of(1).route.kind, edge_closed);
  EXPECT_EQ(fleet_size(), 0u);
}

TEST_F(edge_relay, a_session_past_its_strikes_is_closed_and_the_relay_kept) {
  edge_options eo;
  eo.max_strikes = 4;
  open(eo);
  relay_peer r(port, "r1");
  r.routed(1, edge_join, join_payload());
  r.routed(2, edge_join, join_payload());
  ASSERT_TRUE(wait_for([&] { return fleet_size() == 2; }));
  for (uint32_t t = 0; t < 10; ++t) r.routed(1, edge_result, forged_result(t));
  routed_frame f;
  do f = r.next_of(1);
  while (f.kind == edge_routed && f.route.kind != edge_closed);
  ASSERT_EQ(f.route.kind, edge_closed);
  EXPECT_NE(reason_of(f).find("refused frames"), std::string::npos) << reason_of(f);
  EXPECT_TRUE(wait_for([&] { return fleet_size() == 1; }));
  EXPECT_EQ(counters().dropped_misbehaving, 1u);
  r.routed(3, edge_join, join_payload());
  EXPECT_EQ(r.next_of(3).route.kind, edge_welcome);
}

// --max-devices caps devices behind relays and on their own connections together.
TEST_F(edge_relay, the_ps_admits_at_most_its_cap_of_devices_behind_relays_too) {
  edge_options eo;
  eo.max_connections = 3;
  open(eo);
  peer direct(port);
  direct.join();
  ASSERT_EQ(direct.next().first, edge_welcome);
  relay_peer r(port, "r1");
  r.routed(1, edge_join, join_payload());
  EXPECT_EQ(r.next_of(1).route.kind, edge_welcome);
  r.routed(2, edge_join, join_payload());
  EXPECT_EQ(r.next_of(2).route.kind, edge_welcome);
  r.routed(3, edge_join, join_payload());
  auto refused = r.next_of(3);
  EXPECT_EQ(refused.route.kind, edge_refused);
  EXPECT_NE(reason_of(refused).find("as many as it admits (--max-devices)"), std::string::npos) << reason_of(refused);
  EXPECT_EQ(r.next_of(3).route.kind, edge_closed);
  r.routed(2, edge_leave);
  ASSERT_TRUE(wait_for([&] { return fleet_size() == 2; }));
  r.routed(4, edge_join, join_payload());
  EXPECT_EQ(r.next_of(4).route.kind, edge_welcome) << "a device that left makes room";
  peer late(port);  // a socket is free (the cap's third), a place in the fleet is not
  late.join();
  const auto reason = late.next_refusal();
  EXPECT_NE(reason.find("as many as it admits (--max-devices)"), std::string::npos) << reason;
  EXPECT_EQ(fleet_size(), 3u);
}

TEST_F(edge_relay, a_silent_session_is_closed_while_its_relay_lives) {
  edge_options eo;
  eo.idle_timeout = 600ms;
  open(eo);
  relay_peer r(port, "r1");
  r.routed(1, edge_join, join_payload());
  ASSERT_EQ(r.next_of(1).route.kind, edge_welcome);
  std::optional<routed_frame> closed;
  std::thread keepalive([&] {
    for (int i = 0; i < 25; ++i) {
      r.frame(edge_heartbeat, {});  // the relay's own
      std::this_thread::sleep_for(100ms);
    }
  });
  auto f = r.next_of(1);
  keepalive.join();
  EXPECT_EQ(f.route.kind, edge_closed);
  EXPECT_NE(reason_of(f).find("idle"), std::string::npos) << reason_of(f);
  r.routed(2, edge_join, join_payload());
  EXPECT_EQ(r.next_of(2).route.kind, edge_welcome) << "the relay's connection stayed open";
}

TEST_F(edge_relay, a_malformed_route_or_an_unrouted_frame_closes_the_relay) {
  open();
  {
    relay_peer r(port, "r1");
    r.routed(0, edge_heartbeat);  // session 0
    EXPECT_TRUE(r.sees_close());
  }
  {
    relay_peer r(port, "r2");
    r.routed(1, edge_join, join_payload());
    ASSERT_EQ(r.next_of(1).route.kind, edge_welcome);
    r.frame(edge_result, std::vector<char>(64));  // a device's frame without a route
    EXPECT_TRUE(r.sees_close());
  }
  EXPECT_TRUE(wait_for([&] { return fleet_size() == 0; }));
  EXPECT_EQ(counters().dropped_misbehaving, 2u);
}
