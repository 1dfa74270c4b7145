#pragma once
// A relay's connection at the edge gateway (edge_gateway.hpp): its hello,
// its devices as sessions with proxies of their own, and the frames between
// them (schema/edge_relay_codec.hpp). Functions of the gateway actor's
// state, called from its handlers only.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/gateway/edge_admission.hpp"

namespace cleave::edge_detail {

// A relay's hello, the first frame of connection `conn`: the connection
// becomes the relay's, or is refused.
void admit_relay(gateway_ptr self, uint64_t conn, edge_connection& c, const transport::bulk_frame& f);

// A frame on a relay's connection: its own heartbeat, or one of its
// devices'. The answer returns the frame's credit.
caf::result<std::vector<char>> from_relay(gateway_ptr self, edge_connection& c, transport::bulk_frame& f);

// Ends a relay's session: its proxy exits, and the relay is told to close
// its device's connection, with `why`.
void close_session(gateway_ptr self, uint64_t conn, edge_connection& c, uint32_t session, const std::string& why,
                   uint64_t edge_counters::*counter);

// Ends the sessions of every relay silent for longer than the idle timeout.
void close_silent_sessions(gateway_ptr self, caf::timestamp now);

}  // namespace cleave::edge_detail
