#pragma once
// A device process's one link to the job: a connection to the ps's device
// edge (actors/gateway/edge_gateway.hpp) that speaks only the edge's frames
// (schema/edge_codec.hpp), never CAF's BASP. To the device actor the link is
// both its planner and its detector: a join request becomes a join frame and
// is answered by the welcome frame, heartbeats become heartbeat frames, task
// frames become tile_task messages whose answers (tile_result, tile_miss)
// go back as frames, and the run_over frame ends the device. When the
// connection closes the link exits with the reason, and the device, which
// monitors its planner, leaves with it.

#include <cstdint>
#include <string>

#include <caf/all.hpp>

#include "actors/transport/bulk_channel.hpp"

namespace cleave {

struct edge_link_options {
  std::string host;
  uint16_t port = 0;
  std::string token;  // a one-time join token, when the job uses them
  transport::bulk_options channel;
};

struct edge_link_state {
  edge_link_options opts;
  caf::actor channel;
  caf::actor device;  // the device actor that joined through this link
  caf::response_promise joining;
  bool welcomed = false;
  static inline const char* name = "cleave.edge_link";
};

// Connects to the edge at opts.host:opts.port (blocking for the TCP connect)
// and returns the link, ready for a device actor to join through.
caf::expected<caf::actor> connect_edge(caf::actor_system& sys, edge_link_options opts);

}  // namespace cleave
