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

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/all.hpp>

#include "actors/transport/bulk_channel.hpp"
#include "schema/edge_codec.hpp"

namespace cleave {

struct edge_link_options {
  std::string host;
  uint16_t port = 0;
  std::string token;  // a one-time join token, for a device without a certificate
  std::string csr;    // with it: the certificate request the ps signs
  // Called with the certificate the ps signed for the request.
  std::function<void(const std::string&)> on_certificate;
  transport::bulk_options channel;
  // Set when the ps welcomes the device (a connection it accepts and then
  // turns away does not count as having reached it).
  std::shared_ptr<std::atomic<bool>> welcomed;
  // Called with the welcome (a coordinator over shard processes names their
  // edges there: shard_links.hpp).
  std::function<void(const edge_welcome_msg&)> on_welcome;
};

struct edge_link_state {
  edge_link_options opts;
  caf::actor channel;
  caf::actor device;  // the device actor that joined through this link
  caf::response_promise joining;
  bool welcomed = false;
  static inline const char* name = "cleave.edge_link";
};

// A link that ends with a refusal was turned away by the ps (a refused
// frame, or a TLS handshake that refused a certificate): trying again will
// not help. Any other end means the ps was lost.
caf::error edge_refusal(const std::string& why);
bool is_edge_refusal(const caf::error& err);

// Connects to the edge at opts.host:opts.port (blocking for the TCP connect)
// and returns the link, ready for a device actor to join through.
caf::expected<caf::actor> connect_edge(caf::actor_system& sys, edge_link_options opts);

}  // namespace cleave
