#include "actors/gateway/edge_gateway.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "actors/gateway/edge_admission.hpp"
#include "actors/gateway/relay_sessions.hpp"
#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"

namespace cleave {

using namespace transport;

namespace {

using namespace edge_detail;
using seconds_d = std::chrono::duration<double>;

constexpr auto sweep_interval = std::chrono::milliseconds(500);

double seconds_since_epoch(caf::timestamp t) {
  return std::chrono::duration_cast<seconds_d>(t.time_since_epoch()).count();
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
  close_silent_sessions(self, now);
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
    if (seat.session != 0)
      return close_session(self, seat.conn, c->second, seat.session, "its proxy ended: " + why, counter);
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
