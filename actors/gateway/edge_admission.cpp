#include "actors/gateway/edge_admission.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "schema/errors.hpp"

namespace cleave::edge_detail {

using namespace transport;

void end_proxy(gateway_ptr self, const caf::actor& proxy, const std::string& why) {
  self->state.seat_of_proxy.erase(proxy.address());
  self->send_exit(proxy, fail(why));
}

void forget(gateway_ptr self, std::map<uint64_t, edge_connection>::iterator it, const std::string& why) {
  auto& c = it->second;
  if (c.proxy) end_proxy(self, c.proxy, why);
  for (auto& [session, s] : c.sessions) end_proxy(self, s.proxy, why);
  self->state.conns.erase(it);
}

void close_conn(gateway_ptr self, uint64_t conn, const std::string& why, uint64_t edge_counters::*counter) {
  auto& st = self->state;
  auto it = st.conns.find(conn);
  if (it == st.conns.end()) return;
  spdlog::warn("edge: dropping connection {} ({}): {}", conn, it->second.peer, why);
  if (counter != nullptr) ++(st.counters.*counter);
  if (st.channel) self->send(st.channel, bulk_closed_atom::value, conn);
  forget(self, it, "dropped: " + why);
}

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

caf::expected<edge_join_msg> checked_join(gateway_ptr self, const bulk_frame& f) {
  auto join = decode_join(f.payload.data(), f.payload.size());
  if (!join) return join.error();
  if (join->schema_version != message_schema_version)
    return fail("schema version " + std::to_string(join->schema_version) + " is not "
                + std::to_string(message_schema_version));
  if (auto err = validate(join->profile)) return err;
  if (self->state.opts.admit_join)
    if (auto err = self->state.opts.admit_join(*join)) return err;
  // Devices behind relays count with the direct ones (edge_options::max_connections).
  if (const auto held = self->state.seat_of_proxy.size(); held >= self->state.opts.max_connections)
    return fail("the ps holds " + std::to_string(held) + " devices, as many as it admits (--max-devices)");
  return join;
}

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

}  // namespace cleave::edge_detail
