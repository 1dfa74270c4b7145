#pragma once
// The device edge on loopback for tests: a planner and detector, a gateway
// with its listener, device processes' links, and a raw peer that speaks the
// channel's framing by hand (a hostile device, or a relay).

#include <array>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <gtest/gtest.h>

#include "actors/detector/detector_actor.hpp"
#include "actors/device/device_actor.hpp"
#include "actors/device/edge_link.hpp"
#include "actors/gateway/edge_gateway.hpp"
#include "actors/planner/planner_actor.hpp"
#include "actors/transport/frame.hpp"
#include "schema/edge_codec.hpp"
#include "schema/tile_codec.hpp"
#include "tests/raw_client.hpp"
#include "tests/runtime_fixture.hpp"

namespace cleave::edge_testing {

using namespace std::chrono_literals;

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
  // The reason of the refusal that must come next; "" if something else came.
  std::string next_refusal() {
    auto [kind, payload] = next();
    if (kind != edge_refused) return {};
    auto reason = decode_refusal(payload.data(), payload.size());
    return reason ? *reason : std::string{};
  }
};

// A 4x4 result for tile `tile` of step 1's first product: one no task asked for.
inline std::vector<char> forged_result(uint32_t tile) {
  tile_result forged;
  forged.rows = forged.cols = 4;
  forged.data.assign(16, 1.0f);
  forged.key = tile_key{1, 0, tile};
  std::vector<char> b(encoded_size(forged));
  encode(forged, b.data());
  return b;
}

}  // namespace cleave::edge_testing
