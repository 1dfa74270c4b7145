#include "schema/edge_relay_codec.hpp"

#include "schema/errors.hpp"
#include "schema/fleet_relays.hpp"
#include "schema/wire.hpp"

namespace cleave {

template <class M, class Io>
wire::fields_of<M, edge_relay_hello_msg> wire_fields(M& m, Io& io) {
  return io(m.schema_version, wire::text(m.seat.name, max_relay_name), m.seat.store_bytes, m.seat.downlink,
            m.seat.uplink, m.seat.fanout, m.seat.latency);
}

std::vector<char> encode(const edge_relay_hello_msg& m) { return wire::encode(m); }

caf::expected<edge_relay_hello_msg> decode_relay_hello(const char* data, size_t size) {
  auto m = wire::read_whole<edge_relay_hello_msg>(data, size, "relay hello");
  if (!m) return m;
  if (m->seat.name.empty()) return fail("relay hello: a relay without a name");
  if (auto err = validate(relay_profile_of(m->seat))) return fail("relay hello: " + describe(err));
  return m;
}

void write_route(const edge_route& r, char* out) { wire::write(out, r.session, r.kind, r.flags, r.tag); }

void append_route(std::vector<char>& payload, const edge_route& r) {
  const size_t at = payload.size();
  payload.resize(at + edge_route_bytes);
  write_route(r, payload.data() + at);
}

caf::expected<edge_route> take_route(std::vector<char>& payload, uint64_t max_tile_bytes) {
  if (payload.size() < edge_route_bytes)
    return fail("routed frame: " + std::to_string(payload.size()) + " bytes, shorter than its route");
  const size_t own = payload.size() - edge_route_bytes;
  edge_route r;
  if (!wire::decode_exact(payload.data() + own, edge_route_bytes, r.session, r.kind, r.flags, r.tag))
    return fail("routed frame: a malformed route");
  if (r.flags != 0 && (r.flags != route_uncertified || r.kind != edge_join))
    return fail("routed frame: flags " + std::to_string(r.flags) + " on a " + to_string(static_cast<edge_kind>(r.kind)));
  if (r.session == 0) return fail("routed frame: session 0");
  if (!routable(r.kind)) return fail("routed frame: a frame of kind " + std::to_string(r.kind) + " inside");
  if (const uint64_t cap = edge_payload_cap(r.kind, max_tile_bytes); own > cap)
    return fail(std::string{"routed frame: a "} + to_string(static_cast<edge_kind>(r.kind)) + " frame of "
                + std::to_string(own) + " bytes, over its cap of " + std::to_string(cap));
  payload.resize(own);
  return r;
}

}  // namespace cleave
