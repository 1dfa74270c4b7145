#pragma once
// The edge gateway's doors, shared by a device's own connection and a
// relay's sessions (relay_sessions.hpp): a join's checks, a join token
// traded for a certificate, a device's proxy, a refusal, and closing a
// connection or ending a proxy. Functions of the gateway actor's state,
// called from its handlers only.

#include <cstdint>
#include <map>
#include <string>

#include <caf/all.hpp>

#include "actors/gateway/edge_gateway.hpp"
#include "schema/edge_codec.hpp"

namespace cleave::edge_detail {

using gateway_ptr = caf::stateful_actor<edge_gateway_state>*;

// Ends a proxy with `why` and forgets whom it spoke for.
void end_proxy(gateway_ptr self, const caf::actor& proxy, const std::string& why);

// Forgets a connection, and ends its proxies (a device's, or a relay's
// devices') with `why`.
void forget(gateway_ptr self, std::map<uint64_t, edge_connection>::iterator it, const std::string& why);

// Closes a connection the gateway gives up on, counted under `counter` (if
// any). Frames of it still in flight find no connection and are ignored.
void close_conn(gateway_ptr self, uint64_t conn, const std::string& why, uint64_t edge_counters::*counter);

// A device without a certificate trades a join token for one.
caf::expected<std::string> redeem(gateway_ptr self, const std::string& peer, const edge_join_msg& join);

// Refuses a connection's first frame with the reason, then closes it once
// the refusal is in the socket's buffer.
void refuse_conn(gateway_ptr self, uint64_t conn, const std::string& peer, const std::string& why);

// A device's join, from its own connection or a relay's session: decoded,
// or the reason to refuse it (its schema, its profile, the shard's own
// rule, or a fleet at --max-devices).
caf::expected<edge_join_msg> checked_join(gateway_ptr self, const transport::bulk_frame& f);

// A proxy for the device admitted on `seat`, behind `relay` if any.
caf::actor spawn_proxy(gateway_ptr self, proxy_seat seat, const std::string& peer, edge_join_msg join,
                       std::string certificate, const relay_seat& relay);

}  // namespace cleave::edge_detail
