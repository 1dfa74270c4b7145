#pragma once
// A TCP connect that gives up after a timeout. CAF 0.17's own connect
// blocks until the kernel does (about two minutes for a host that drops SYNs);
// a device dialling a ps that is gone or unreachable must not hang that long
// between its attempts. Plain POSIX sockets, no actors.

#include <chrono>
#include <string>

#include <caf/expected.hpp>

namespace cleave::transport {

// Resolves `host` and connects to the first address that answers within
// `timeout` (all of them share it). Returns the connected socket, blocking;
// the caller owns it.
caf::expected<int> connect_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);

}  // namespace cleave::transport
