#pragma once
// The admin console's port: `GET /` is answered with the page
// (console_page.hpp), `GET /api/state` (also `/status`) with the console
// actor's document as JSON, `GET /metrics` with the same in Prometheus' text
// format (metrics_view.hpp), and `POST /api/control/...` (controls.hpp) is
// carried out by the console when it bears the admin token.
//
// Every port is hostile: a connection may send one request head of at most
// max_http_head_bytes, and a body of at most max_http_body_bytes, within
// head_timeout, and at most max_connections are open at once. Anything else
// gets an error status (or nothing) and is closed.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include "actors/console/console_protocol.hpp"

namespace cleave {

struct console_endpoint_options {
  std::string bind_address = "127.0.0.1";  // the console shows the fleet: loopback unless asked
  size_t max_connections = 16;
  caf::timespan head_timeout = std::chrono::seconds(5);
  std::string admin_token;  // empty: every control is refused
};

// Listens on `port` (0: any free port) and returns the port bound.
caf::expected<uint16_t> open_console_endpoint(caf::actor_system& sys, uint16_t port,
                                              console_handle console,
                                              console_endpoint_options opts = {});

}  // namespace cleave
