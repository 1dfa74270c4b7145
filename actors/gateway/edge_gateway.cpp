#include "actors/gateway/edge_gateway.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "schema/edge_codec.hpp"
#include "schema/edge_relay_codec.hpp"
#include "schema/errors.hpp"

namespace cleave {

using namespace transport;

namespace {

using gateway_ptr = caf::stateful_actor<edge_gateway_state>*;
using seconds_d = std::chrono::duration<double>;

constexpr auto sweep_interval = std::chrono::milliseconds(500);

double seconds_since_epoch(caf::timestamp t) {
  return std::chrono::duration_cast<seconds_d>(t.time_since_epoch()).count();
}

void end_proxy(gateway_ptr self, const caf::actor& proxy, const std::string& why) {
  self->state.seat_of_proxy.erase(proxy.address());
  self->send_exit(proxy, fail(why));
}

// Forgets a connection, and ends its proxies (a device's, or a relay's
// devices') with `why`.
void forget(gateway_ptr self, std::map<uint64_t, edge_connection>::iterator it, const std::string& why) {
  auto& c = it->second;
  if (c.proxy) end_proxy(self, c.proxy, why);
  for (auto& [session, s] : c.sessions) end_proxy(self, s.proxy, why);
  self->state.conns.erase(it);
}

// Closes a connection the gateway gives up on, counted under `counter` (if
// any). Frames of it still in flight find no connection and are ignored.
void close_conn(gateway_ptr self, uint64_t conn, const std::string& why, uint64_t edge_counters::*counter) {
  auto& st = self->state;
  auto it = st.conns.find(conn);
  if (it == st.conns.end()) return;
  spdlog::warn("edge: dropping connection {} ({}): {}", conn, it->second.peer, why);
  if (counter != nullptr) ++(st.counters.*counter);
  if (st.channel) self->send(st.channel, bulk_closed_atom::value, conn);
  forget(self, it, "dropped: " + why);
}

// A device without a certificate trades a join token for one.
caf::expected<std::string> redeem(gateway_ptr self, const std::string& peer, const edge_join_msg& join) {
  auto& st = self->state;
  if (join.token.empty())
    return fail("this ps admits a device by a certificate the job's CA signed or by a one-time join "
                "token; it presented neither");
  if (!st.opts.tokens->has(join.token)) return fail("an unknown or already used join token");
  auto cert = st.opts.issuer->issue(join.csr, st.opts.certificate_days);
  if (!cert) return cert.error();
  auto used = st.opts.tokens->consume(join.token);
  if (!used) {
    spdlog::error("edge: cannot strike a used join token: {}", describe(used.error()));
    return fail("the ps cannot record its tokens; try again later");
  }
  if (!*used) return fail("an unknown or already used join token");
  ++st.counters.certificates_issued;
  spdlog::info("edge: issued a certificate to the device at {} for a join token ({} left)", peer,
               st.opts.tokens->left());
  return cert;
}

// A frame from the gateway to a device behind a relay: its payload, then its route.
void send_routed(gateway_ptr self, uint64_t conn, uint32_t session, edge_kind kind, const std::vector<char>& payload) {
  bulk_buffer buf(payload.size() + edge_route_bytes);
  std::copy(payload.begin(), payload.end(), buf.payload());
  write_route({session, kind, 0}, buf.payload() + payload.size());
  self->request(self->state.channel, caf::infinite, bulk_send_atom::value, conn, static_cast<uint16_t>(edge_routed),
                uint64_t{0}, std::move(buf))
    .then([](bulk_buffer&) {}, [](caf::error&) {});
}

// Refuses a connection's first frame with the reason, then closes it once
// the refusal is in the socket's buffer.
void refuse_conn(gateway_ptr self, uint64_t conn, const std::string& peer, const std::string& why) {
  auto& st = self->state;
  spdlog::warn("edge: refusing {}: {}", peer, why);
  ++st.counters.refused;
  auto reason = encode_refusal(why);
  bulk_buffer buf(reason.size());
  std::copy(reason.begin(), reason.end(), buf.payload());
  self->request(st.channel, caf::infinite, bulk_send_atom::value, conn, static_cast<uint16_t>(edge_refused),
                uint64_t{0}, std::move(buf))
    .then([=](bulk_buffer&) { self->send(self->state.channel, bulk_closed_atom::value, conn); },
          [](caf::error&) {});
}

// A device's join, from its own connection or a relay's session: refused
// with the reason, or decoded.
caf::expected<edge_join_msg> checked_join(gateway_ptr self, const bulk_frame& f) {
  auto join = decode_join(f.payload.data(), f.payload.size());
  if (!join) return join.error();
  if (join->schema_version != message_schema_version)
    return fail("schema version " + std::to_string(join->schema_version) + " is not "
                + std::to_string(message_schema_version));
  if (auto err = validate(join->profile)) return err;
  if (self->state.opts.admit_join)
    if (auto err = self->state.opts.admit_join(*join)) return err;
  return join;
}

// A proxy for the device admitted on `seat`, behind `relay` if any.
caf::actor spawn_proxy(gateway_ptr self, proxy_seat seat, const std::string& peer, edge_join_msg join,
                       std::string certificate, const relay_seat& relay) {
  auto& st = self->state;
  proxy_options po;
  po.certificate = std::move(certificate);
  po.conn = seat.conn;
  po.session = seat.session;
  po.relay = relay;
  po.channel = st.channel;
  po.gateway = caf::actor{self};
  po.planner = st.opts.planner;
  po.heartbeat_seconds = st.opts.heartbeat_seconds;
  po.max_strikes = st.opts.max_strikes;
  po.peer = peer;
  po.shard_edges = st.opts.shard_edges;
  po.prove = st.opts.prove;
  auto proxy = self->spawn(device_proxy, std::move(po), std::move(join));
  self->monitor(proxy);
  st.seat_of_proxy[proxy.address()] = seat;
  ++st.counters.admitted;
  return proxy;
}

// A relay's hello: the connection becomes the relay's, or is refused.
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

// The first frame of a connection: a join, a relay's hello, or the
// connection is refused.
void admit(gateway_ptr self, uint64_t conn, edge_connection& c, const bulk_frame& f) {
  auto& st = self->state;
  if (f.kind == edge_relay_hello) return admit_relay(self, conn, c, f);
  if (f.kind != edge_join)
    return refuse_conn(self, conn, c.peer, std::string{"the first frame must be a join, not "}
                                            + to_string(static_cast<edge_kind>(f.kind)));
  auto join = checked_join(self, f);
  if (!join) return refuse_conn(self, conn, c.peer, describe(join.error()));
  std::string certificate;
  if (st.opts.tokens && !c.certified) {
    auto issued = redeem(self, c.peer, *join);
    if (!issued) return refuse_conn(self, conn, c.peer, describe(issued.error()));
    certificate = std::move(*issued);
  }
  c.proxy = spawn_proxy(self, {conn, 0}, c.peer, std::move(*join), std::move(certificate), {});
}

// Ends a relay's session: its proxy exits, and the relay is told to close
// its device's connection.
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

// A frame on a relay's connection: its own heartbeat, or one of its devices'.
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
    if (c.sessions.size() >= st.opts.max_relay_sessions) {
      refuse("the relay holds " + std::to_string(c.sessions.size()) + " devices, as many as the ps admits through one");
      return std::move(f.payload);
    }
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

void sweep(gateway_ptr self) {
  auto& st = self->state;
  const auto now = caf::make_timestamp();
  std::vector<std::pair<uint64_t, bool>> late;  // conn, still in its handshake
  for (const auto& [conn, c] : st.conns) {
    if (!c.admitted() && now - c.opened > st.opts.handshake_timeout)
      late.emplace_back(conn, true);
    else if (c.admitted() && now - c.last_frame > st.opts.idle_timeout)
      late.emplace_back(conn, false);
  }
  for (auto [conn, handshake] : late) {
    if (handshake)
      close_conn(self, conn, "no join within the handshake timeout", &edge_counters::handshake_timeouts);
    else
      close_conn(self, conn, "silent past the idle timeout", &edge_counters::idle_timeouts);
  }
  for (auto& [conn, c] : st.conns) {
    std::vector<uint32_t> silent;
    for (const auto& [session, sc] : c.sessions)
      if (now - sc.last_frame > st.opts.idle_timeout) silent.push_back(session);
    for (auto session : silent)
      close_session(self, conn, c, session, "silent past the idle timeout", &edge_counters::idle_timeouts);
  }
  self->delayed_send(self, sweep_interval, tick_atom::value);
}

}  // namespace

caf::behavior edge_gateway(caf::stateful_actor<edge_gateway_state>* self, edge_options opts) {
  self->state.opts = std::move(opts);
  self->delayed_send(self, sweep_interval, tick_atom::value);
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& st = self->state;
    auto it = st.seat_of_proxy.find(msg.source);
    if (it == st.seat_of_proxy.end()) return;
    const auto seat = it->second;
    st.seat_of_proxy.erase(it);
    auto c = st.conns.find(seat.conn);
    if (c == st.conns.end()) return;
    // The proxy ends for strikes (device_proxy.hpp), a refused join, or a
    // planner that never came back; only the first is the device's doing.
    const auto why = describe(msg.reason);
    auto counter = why.find(proxy_strike_reason) != std::string::npos ? &edge_counters::dropped_misbehaving
                   : why.rfind(proxy_refusal_reason, 0) == 0      ? &edge_counters::refused
                                                                  : nullptr;
    if (seat.session != 0) {
      if (auto s = c->second.sessions.find(seat.session); s != c->second.sessions.end()) {
        s->second.proxy = nullptr;  // gone already
        c->second.sessions.erase(s);
        if (counter != nullptr) ++(st.counters.*counter);
        spdlog::warn("edge: dropping device session {} of relay '{}': its proxy ended: {}", seat.session,
                     c->second.relay.name, why);
        send_routed(self, seat.conn, seat.session, edge_closed, encode_refusal("its proxy ended: " + why));
      }
      return;
    }
    c->second.proxy = nullptr;  // gone already
    close_conn(self, seat.conn, "its proxy ended: " + why, counter);
  });
  return {
    [=](bulk_opened_atom, caf::actor channel, uint64_t conn, const std::string& peer) {
      auto& st = self->state;
      st.channel = std::move(channel);
      const auto now = caf::make_timestamp();
      edge_connection c;
      c.peer = peer;
      c.opened = c.last_frame = now;
      c.limiter = rate_limiter{st.opts.rate, seconds_since_epoch(now)};
      st.conns.insert_or_assign(conn, std::move(c));
      ++st.counters.connections;
      spdlog::debug("edge: connection {} from {}", conn, peer);
    },
    [=](bulk_peer_atom, uint64_t conn, const std::string& name, bool may_serve) {
      // TLS: the device's certificate, verified against the job's CA (and CRL).
      if (auto it = self->state.conns.find(conn); it != self->state.conns.end() && !name.empty()) {
        it->second.peer = "'" + name + "' at " + it->second.peer;
        it->second.certified = true;
        it->second.certificate_name = name;
        it->second.certificate_serves = may_serve;
      }
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      auto& st = self->state;
      auto it = st.conns.find(conn);
      if (it == st.conns.end()) return;
      if (!it->second.relay.empty())
        spdlog::info("edge: relay '{}' ({}) closed with {} devices: {}", it->second.relay.name, it->second.peer,
                     it->second.sessions.size(), reason);
      else if (it->second.proxy)
        spdlog::info("edge: device connection {} ({}) closed: {}", conn, it->second.peer, reason);
      forget(self, it, "its connection closed: " + reason);
    },
    [=](bulk_frame_atom, bulk_frame& f) -> caf::result<std::vector<char>> {
      auto& st = self->state;
      auto it = st.conns.find(f.conn);
      if (it == st.conns.end()) return std::move(f.payload);  // already given up on
      auto& c = it->second;
      const auto now = caf::make_timestamp();
      c.last_frame = now;
      if (!c.relay.empty()) return from_relay(self, c, f);
      // Results and misses answer tasks the ps sent, so the tasks bound them
      // (the proxy strikes any other); the rate limit is for what a device
      // sends of its own accord.
      const bool answer = c.proxy && (f.kind == edge_result || f.kind == edge_miss || f.kind == edge_ml_scores
                                      || f.kind == edge_ml_hidden_grad || f.kind == edge_ml_done
                                      || f.kind == edge_ml_state || f.kind == edge_ml_error);
      auto d = answer ? rate_decision{} : c.limiter.admit(seconds_since_epoch(now));
      if (d.verdict == rate_verdict::drop) {
        close_conn(self, f.conn, "flooding: " + std::to_string(d.delay_seconds) + " s of frames ahead of its rate",
                   &edge_counters::dropped_flooding);
        return std::move(f.payload);
      }
      if (!c.admitted()) {
        admit(self, f.conn, c, f);
        return std::move(f.payload);
      }
      if (f.kind == edge_join) {
        close_conn(self, f.conn, "a second join", &edge_counters::dropped_misbehaving);
        return std::move(f.payload);
      }
      if (f.kind == edge_leave) {
        spdlog::info("edge: device at {} is leaving", c.peer);
        self->send(st.channel, bulk_closed_atom::value, f.conn);
        return std::move(f.payload);
      }
      if (f.kind == edge_heartbeat) {
        auto peak = decode_heartbeat(f.payload.data(), f.payload.size());
        if (!peak) {
          close_conn(self, f.conn, describe(peak.error()), &edge_counters::dropped_misbehaving);
          return std::move(f.payload);
        }
        self->send(c.proxy, heartbeat_atom::value, f.received_ns, *peak);
        if (d.verdict == rate_verdict::pass) return std::move(f.payload);
      }
      auto rp = self->make_response_promise<std::vector<char>>();
      auto hold = [=](std::vector<char>&& buf, double delay) mutable {
        if (delay <= 0) {
          rp.deliver(std::move(buf));
          return;
        }
        auto& held = self->state.held;
        const uint64_t id = self->state.next_held++;
        held.emplace(id, held_credit{rp, std::move(buf)});
        self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(seconds_d{delay}),
                           credit_atom::value, id);
      };
      if (d.verdict == rate_verdict::throttle) ++st.counters.throttled_frames;
      const double delay = d.verdict == rate_verdict::throttle ? d.delay_seconds : 0;
      if (f.kind == edge_heartbeat) {
        hold(std::move(f.payload), delay);
        return rp;
      }
      // The proxy's answer returns the credit: its mailbox holds at most one window.
      self->request(c.proxy, caf::infinite, bulk_frame_atom::value, std::move(f))
        .then([=](std::vector<char>& buf) mutable { hold(std::move(buf), delay); },
              [=](caf::error&) mutable { hold({}, delay); });
      return rp;
    },
    [=](credit_atom, uint64_t id) {
      auto& held = self->state.held;
      if (auto it = held.find(id); it != held.end()) {
        it->second.rp.deliver(std::move(it->second.payload));
        held.erase(it);
      }
    },
    [=](tick_atom) { sweep(self); },
    [=](caf::get_atom) { return self->state.counters; },
  };
}

uint64_t edge_read_chunk_bytes(size_t max_connections) {
  const uint64_t each = edge_read_budget_bytes / std::max<uint64_t>(max_connections, 1);
  return std::clamp<uint64_t>(each, uint64_t{64} << 10, uint64_t{1} << 20);
}

bulk_options edge_channel_options(const edge_options& opts, bulk_options base) {
  const uint64_t tile_cap = opts.max_tile_bytes;
  base.max_payload = edge_payload_cap(edge_routed, tile_cap);
  base.max_connections = opts.max_connections;
  base.chunk_bytes = opts.read_chunk_bytes > 0 ? opts.read_chunk_bytes : edge_read_chunk_bytes(opts.max_connections);
  base.tls_read_bytes = std::min<uint64_t>(base.tls_read_bytes, base.chunk_bytes);
  base.lazy_credit_bytes = edge_lazy_credit_bytes;
  base.receive_window = std::max(base.receive_window, frame_cost(base.max_payload) + edge_lazy_credit_bytes);
  base.first_data_kinds = {edge_join, edge_relay_hello};
  base.max_payload_for_kind = [tile_cap](uint16_t kind) { return edge_payload_cap(kind, tile_cap); };
  return base;
}

}  // namespace cleave
