#include "actors/gateway/edge_gateway.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "schema/edge_codec.hpp"
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

// Forgets a connection, and ends its proxy (if it has one still) with `why`.
void forget(gateway_ptr self, std::map<uint64_t, edge_connection>::iterator it, const std::string& why) {
  auto& st = self->state;
  if (auto& proxy = it->second.proxy) {
    st.conn_of_proxy.erase(proxy.address());
    self->send_exit(proxy, fail(why));
  }
  st.conns.erase(it);
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
caf::expected<std::string> redeem(gateway_ptr self, const edge_connection& c, const edge_join_msg& join) {
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
  spdlog::info("edge: issued a certificate to the device at {} for a join token ({} left)", c.peer,
               st.opts.tokens->left());
  return cert;
}

// The first frame of a connection: a join, or the connection is refused.
void admit(gateway_ptr self, uint64_t conn, edge_connection& c, const bulk_frame& f) {
  auto& st = self->state;
  auto refuse = [&](const std::string& why) {
    spdlog::warn("edge: refusing {}: {}", c.peer, why);
    ++st.counters.refused;
    auto reason = encode_refusal(why);
    bulk_buffer buf(reason.size());
    std::copy(reason.begin(), reason.end(), buf.payload());
    // Closed once the refusal is in the socket's buffer.
    self->request(st.channel, caf::infinite, bulk_send_atom::value, conn,
                  static_cast<uint16_t>(edge_refused), uint64_t{0}, std::move(buf))
      .then([=](bulk_buffer&) { self->send(self->state.channel, bulk_closed_atom::value, conn); },
            [](caf::error&) {});
  };
  if (f.kind != edge_join)
    return refuse(std::string{"the first frame must be a join, not "}
                  + to_string(static_cast<edge_kind>(f.kind)));
  auto join = decode_join(f.payload.data(), f.payload.size());
  if (!join) return refuse(describe(join.error()));
  if (join->schema_version != message_schema_version)
    return refuse("schema version " + std::to_string(join->schema_version) + " is not "
                  + std::to_string(message_schema_version));
  if (auto err = validate(join->profile)) return refuse(describe(err));
  // Under TLS a relay's joins come over connections with its own
  // certificate, a server certificate of the job's CA (a device's could not
  // dial out as a relay's must): the name they give is the name in it.
  if (!join->relay.empty() && c.certified && join->relay.name != c.certificate_name)
    return refuse("a join through relay '" + join->relay.name + "' came with the certificate of '" + c.certificate_name + "'");
  if (st.opts.admit_join)
    if (auto err = st.opts.admit_join(*join)) return refuse(describe(err));
  std::string certificate;
  if (st.opts.tokens && !c.certified) {
    auto issued = redeem(self, c, *join);
    if (!issued) return refuse(describe(issued.error()));
    certificate = std::move(*issued);
  }
  proxy_options po;
  po.certificate = std::move(certificate);
  po.conn = conn;
  po.channel = st.channel;
  po.gateway = caf::actor{self};
  po.planner = st.opts.planner;
  po.heartbeat_seconds = st.opts.heartbeat_seconds;
  po.max_strikes = st.opts.max_strikes;
  po.peer = c.peer;
  po.shard_edges = st.opts.shard_edges;
  po.prove = st.opts.prove;
  c.proxy = self->spawn(device_proxy, std::move(po), std::move(*join));
  self->monitor(c.proxy);
  st.conn_of_proxy[c.proxy.address()] = conn;
  ++st.counters.admitted;
}

void sweep(gateway_ptr self) {
  auto& st = self->state;
  const auto now = caf::make_timestamp();
  std::vector<std::pair<uint64_t, bool>> late;  // conn, still in its handshake
  for (const auto& [conn, c] : st.conns) {
    if (!c.proxy && now - c.opened > st.opts.handshake_timeout)
      late.emplace_back(conn, true);
    else if (c.proxy && now - c.last_frame > st.opts.idle_timeout)
      late.emplace_back(conn, false);
  }
  for (auto [conn, handshake] : late) {
    if (handshake)
      close_conn(self, conn, "no join within the handshake timeout", &edge_counters::handshake_timeouts);
    else
      close_conn(self, conn, "silent past the idle timeout", &edge_counters::idle_timeouts);
  }
  self->delayed_send(self, sweep_interval, tick_atom::value);
}

}  // namespace

caf::behavior edge_gateway(caf::stateful_actor<edge_gateway_state>* self, edge_options opts) {
  self->state.opts = std::move(opts);
  self->delayed_send(self, sweep_interval, tick_atom::value);
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& st = self->state;
    auto it = st.conn_of_proxy.find(msg.source);
    if (it == st.conn_of_proxy.end()) return;
    const uint64_t conn = it->second;
    st.conn_of_proxy.erase(it);
    if (auto c = st.conns.find(conn); c != st.conns.end()) {
      c->second.proxy = nullptr;  // gone already
      // The proxy ends for strikes (device_proxy.hpp), a refused join, or a
      // planner that never came back; only the first is the device's doing.
      const auto why = describe(msg.reason);
      auto counter = why.find(proxy_strike_reason) != std::string::npos ? &edge_counters::dropped_misbehaving
                     : why.rfind(proxy_refusal_reason, 0) == 0      ? &edge_counters::refused
                                                                    : nullptr;
      close_conn(self, conn, "its proxy ended: " + why, counter);
    }
  });
  return {
    [=](bulk_opened_atom, caf::actor channel, uint64_t conn, const std::string& peer) {
      auto& st = self->state;
      st.channel = std::move(channel);
      const auto now = caf::make_timestamp();
      st.conns[conn] = edge_connection{peer, now, now, {}, rate_limiter{st.opts.rate, seconds_since_epoch(now)}, false, {}};
      ++st.counters.connections;
      spdlog::debug("edge: connection {} from {}", conn, peer);
    },
    [=](bulk_peer_atom, uint64_t conn, const std::string& name) {
      // TLS: the device's certificate, verified against the job's CA (and CRL).
      if (auto it = self->state.conns.find(conn); it != self->state.conns.end() && !name.empty()) {
        it->second.peer = "'" + name + "' at " + it->second.peer;
        it->second.certified = true;
        it->second.certificate_name = name;
      }
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      auto& st = self->state;
      auto it = st.conns.find(conn);
      if (it == st.conns.end()) return;
      if (it->second.proxy)
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
      if (!c.proxy) {
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
  base.max_payload = tile_cap;
  base.max_connections = opts.max_connections;
  base.chunk_bytes = opts.read_chunk_bytes > 0 ? opts.read_chunk_bytes : edge_read_chunk_bytes(opts.max_connections);
  base.tls_read_bytes = std::min<uint64_t>(base.tls_read_bytes, base.chunk_bytes);
  base.lazy_credit_bytes = edge_lazy_credit_bytes;
  base.receive_window = std::max(base.receive_window, frame_cost(tile_cap) + edge_lazy_credit_bytes);
  base.first_data_kind = edge_join;
  base.max_payload_for_kind = [tile_cap](uint16_t kind) { return edge_payload_cap(kind, tile_cap); };
  return base;
}

}  // namespace cleave
