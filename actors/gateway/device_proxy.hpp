#pragma once
// A remote device's stand-in on the server side. The planner, the detector
// and the PS engines talk to it exactly as to a device actor: it joins the
// planner in the device's name, forwards its heartbeats to the detector,
// turns tile tasks into frames on the device's connection and the device's
// result frames back into tile_result messages for the engine that sent the
// task. When the connection closes the proxy exits, and the detector's
// monitor on it declares the device dead.
//
// The device is not trusted: a result or miss is taken only for a task this
// proxy issued and not yet answered; the device id in a frame is ignored
// (the proxy knows whom it speaks for). Whether the result is right (its
// shape and values) is the engine's to judge; a device it quarantines is
// refused with the reason, and its connection closed. Every refused
// frame is a strike, and past max_strikes the proxy exits, which drops the
// connection.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/gateway/device_proxy_protocol.hpp"
#include "schema/edge_codec.hpp"
#include "schema/fleet_member.hpp"

namespace cleave {

struct proxy_options {
  uint64_t conn = 0;                    // the device's connection on `channel`
  uint32_t session = 0;                 // nonzero: a session of a relay's connection `conn`
  relay_seat relay;                     // the relay it is behind, if any
  caf::actor channel;                   // the edge listener's broker
  caf::actor gateway;                   // the proxy speaks for its connection: it ends with it
  std::function<caf::actor()> planner;  // the current planner (it may restart)
  double heartbeat_seconds = 0.1;
  uint32_t max_strikes = 64;
  size_t max_pending = 4096;            // tasks awaiting an answer; the oldest are forgotten past it
  std::string peer;                     // "addr:port", for logs
  std::string certificate;              // sent in the welcome (a join token's)
  std::vector<std::string> shard_edges; // sent in the welcome with prove(id) (edge_gateway.hpp)
  std::function<std::string(int32_t)> prove;
};

// How a proxy's exit reason starts or what it holds, for the gateway's counts.
inline constexpr const char* proxy_refusal_reason = "refused: ";
inline constexpr const char* proxy_strike_reason = "refused frames";

struct pending_tile {
  caf::actor engine;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t a_key = 0;
  uint64_t b_key = 0;
};

struct device_proxy_state {
  proxy_options opts;
  edge_join_msg join;
  int32_t id = -1;  // -1 until the planner welcomed the device
  caf::actor planner;
  caf::actor detector;
  std::map<tile_key, pending_tile> pending;
  // Model-let frames awaiting the device's answer, by frame tag (a sequence
  // number over the slot). Shared with the exit hook, which fails them all.
  std::shared_ptr<std::map<uint64_t, caf::response_promise>> modellets =
    std::make_shared<std::map<uint64_t, caf::response_promise>>();
  uint64_t modellet_seq = 0;
  uint32_t strikes = 0;
  // Whom this proxy monitors (the gateway, its planner). A monitor stays on
  // the monitored actor until taken back, and those live for the whole run:
  // the exit hook, which shares this, takes them back.
  std::shared_ptr<std::vector<caf::actor_addr>> monitoring =
    std::make_shared<std::vector<caf::actor_addr>>();
  static inline const char* name = "cleave.device_proxy";
};

// Messages: device_proxy_protocol.hpp.
caf::behavior device_proxy(caf::stateful_actor<device_proxy_state>* self, proxy_options opts,
                           edge_join_msg join);

}  // namespace cleave
