#pragma once
// "host:port" as flags and the wire name a listener or a peer.

#include <cstdint>
#include <string>
#include <utility>

#include <caf/expected.hpp>

namespace cleave {

// Splits "host:port" at its last colon (the host may be left out when
// allow_no_host) and checks the port (0-65535). Errors name `what`: the
// flag ("--listen") or where the text came from.
caf::expected<std::pair<std::string, uint16_t>> parse_endpoint(const std::string& text,
                                                               const std::string& what,
                                                               bool allow_no_host);

}  // namespace cleave
