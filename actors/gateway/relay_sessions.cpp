#include "actors/gateway/relay_sessions.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "schema/edge_relay_codec.hpp"
#include "schema/errors.hpp"

namespace cleave::edge_detail {

using namespace transport;

namespace {

// A frame from the gateway to a device behind a relay: its payload, then its route.
void send_routed(gateway_ptr self, uint64_t conn, uint32_t session, edge_kind kind, const std::vector<char>& payload) {
  bulk_buffer buf(payload.size() + edge_route_bytes);
  std::copy(payload.begin(), payload.end(), buf.payload());
  write_route({session, kind, 0}, buf.payload() + payload.size());
  self->request(self->state.channel, caf::infinite, bulk_send_atom::value, conn, static_cast<uint16_t>(edge_routed),
                uint64_t{0}, std::move(buf))
    .then([](bulk_buffer&) {}, [](caf::error&) {});
}

}  // namespace

void admit_relay(gateway_ptr self, uint64_t conn, edge_connection& c, const bulk_frame& f) {
  auto& st = self->state;
  auto hello = decode_relay_hello(f.payload.data(), f.payload.size());
  if (!hello) return refuse_conn(self, conn, c.peer, describe(hello.error()));
  const auto& name = hello->seat.name;
  if (hello->schema_version != message_schema_version)
    return refuse_conn(self, conn, c.peer, "schema version " + std::to_string(hello->schema_version) + " is not "
                                            + std::to_string(message_schema_version));
  // Under TLS a relay shows a server certificate of the job's CA, not a
  // client-only device's, and its name is the one in it.
  if (st.opts.tokens && !c.certified)
    return refuse_conn(self, conn, c.peer, "a relay must present its certificate");
  if (c.certified && !c.certificate_serves)
    return refuse_conn(self, conn, c.peer, "relay '" + name + "' came with a device's certificate, not a server "
                                            "certificate of the job's CA");
  if (c.certified && name != c.certificate_name)
    return refuse_conn(self, conn, c.peer, "relay '" + name + "' came with the certificate of '" + c.certificate_name + "'");
  for (const auto& [other, oc] : st.conns)
    if (oc.relay.name == name)
      return refuse_conn(self, conn, c.peer, "a relay named '" + name + "' is connected already");
  c.relay = hello->seat;
  ++st.counters.relays;
  spdlog::info("edge: relay '{}' connected from {}", name, c.peer);
}

void close_session(gateway_ptr self, uint64_t conn, edge_connection& c, uint32_t session, const std::string& why,
                   uint64_t edge_counters::*counter) {
  auto it = c.sessions.find(session);
  if (it == c.sessions.end()) return;
  spdlog::warn("edge: dropping device session {} of relay '{}': {}", session, c.relay.name, why);
  if (counter != nullptr) ++(self->state.counters.*counter);
  send_routed(self, conn, session, edge_closed, encode_refusal(why));
  end_proxy(self, it->second.proxy, "dropped: " + why);
  c.sessions.erase(it);
}

caf::result<std::vector<char>> from_relay(gateway_ptr self, edge_connection& c, bulk_frame& f) {
  auto& st = self->state;
  const uint64_t conn = f.conn;
  if (f.kind == edge_heartbeat) return std::move(f.payload);  // the relay's own: it is alive
  if (f.kind != edge_routed) {
    close_conn(self, conn, std::string{"a relay sent a "} + to_string(static_cast<edge_kind>(f.kind)) + " frame",
               &edge_counters::dropped_misbehaving);
    return std::move(f.payload);
  }
  auto route = take_route(f.payload, st.opts.max_tile_bytes);
  if (!route) {
    close_conn(self, conn, describe(route.error()), &edge_counters::dropped_misbehaving);
    return std::vector<char>{};
  }
  auto it = c.sessions.find(route->session);
  if (route->kind == edge_join) {
    const auto peer = "session " + std::to_string(route->session) + " of relay '" + c.relay.name + "'";
    if (it != c.sessions.end()) {
      close_session(self, conn, c, route->session, "a second join", &edge_counters::dropped_misbehaving);
      return std::move(f.payload);
    }
    auto refuse = [&](const std::string& why) {
      spdlog::warn("edge: refusing {}: {}", peer, why);
      ++st.counters.refused;
      send_routed(self, conn, route->session, edge_refused, encode_refusal(why));
      send_routed(self, conn, route->session, edge_closed, encode_refusal(why));
    };
    auto join = checked_join(self, f);
    if (!join) {
      refuse(describe(join.error()));
      return std::move(f.payload);
    }
    // Its certificate was checked at the relay's door; a device that showed
    // none there trades a join token for one here.
    std::string certificate;
    if (route->flags & route_uncertified) {
      if (!st.opts.tokens) {
        refuse("this ps admits no device without a certificate: it takes no join tokens");
        return std::move(f.payload);
      }
      auto issued = redeem(self, peer, *join);
      if (!issued) {
        refuse(describe(issued.error()));
        return std::move(f.payload);
      }
      certificate = std::move(*issued);
    }
    auto proxy = spawn_proxy(self, {conn, route->session}, peer, std::move(*join), std::move(certificate), c.relay);
    c.sessions.emplace(route->session, relay_session{proxy, caf::make_timestamp()});
    return std::move(f.payload);
  }
  if (it == c.sessions.end()) return std::move(f.payload);  // a session closed meanwhile
  auto& session = it->second;
  session.last_frame = caf::make_timestamp();
  switch (route->kind) {
    case edge_leave:
      spdlog::info("edge: device session {} of relay '{}' left", route->session, c.relay.name);
      end_proxy(self, session.proxy, "it left");
      c.sessions.erase(it);
      return std::move(f.payload);
    case edge_heartbeat: {
      auto peak = decode_heartbeat(f.payload.data(), f.payload.size());
      if (!peak)
        close_session(self, conn, c, route->session, describe(peak.error()), &edge_counters::dropped_misbehaving);
      else
        self->send(session.proxy, heartbeat_atom::value, f.received_ns, *peak);
      return std::move(f.payload);
    }
    default: break;
  }
  f.kind = route->kind;
  f.tag = route->tag;
  auto rp = self->make_response_promise<std::vector<char>>();
  self->request(session.proxy, caf::infinite, bulk_frame_atom::value, std::move(f))
    .then([=](std::vector<char>& buf) mutable { rp.deliver(std::move(buf)); },
          [=](caf::error&) mutable { rp.deliver(std::vector<char>{}); });
  return rp;
}

void close_silent_sessions(gateway_ptr self, caf::timestamp now) {
  auto& st = self->state;
  for (auto& [conn, c] : st.conns) {
    std::vector<uint32_t> silent;
    for (const auto& [session, sc] : c.sessions)
      if (now - sc.last_frame > st.opts.idle_timeout) silent.push_back(session);
    for (auto session : silent)
      close_session(self, conn, c, session, "silent past the idle timeout", &edge_counters::idle_timeouts);
  }
}

}  // namespace cleave::edge_detail
