#include "schema/shard_fleet_codec.hpp"

#include <cmath>
#include <tuple>

#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "schema/wire.hpp"
#include "schema/wire_precision.hpp"

namespace cleave {

namespace {

constexpr size_t secret_bytes = 32;  // job_proof.hpp's job_secret_bytes
constexpr int32_t max_quorum = 1 << 20;

// The figures that must be finite and non-negative.
template <class M>
auto figures(M& m) {
  return std::tie(m.ps_flops, m.ps_egress, m.ps_ingress, m.heartbeat, m.suspect_phi, m.dead_phi, m.tile_timeout,
                  m.speculate, m.replicate, m.ps_tile_seconds);
}

}  // namespace

template <class M, class Io>
wire::fields_of<M, shard_fleet_msg> wire_fields(M& m, Io& io) {
  return std::apply([&](auto&... figure) {
    return io(m.shard, m.shards, m.min_devices, figure..., m.max_tiles_per_device, m.quarantine_after, m.trust_results,
              wire::text(m.secret, secret_bytes), wire::tail([&m] { return m.wire != 0; }, m.wire));
  }, figures(m));
}

std::vector<char> encode(const shard_fleet_msg& m) { return wire::encode(m); }

caf::expected<shard_fleet_msg> decode_shard_fleet(const char* data, size_t size) {
  auto got = wire::read_whole<shard_fleet_msg>(data, size, "fleet request");
  if (!got) return got;
  const auto& m = *got;
  if (m.secret.size() != secret_bytes)
    return fail("fleet request: the job's secret is not " + std::to_string(secret_bytes) + " bytes");
  bool figures_ok = true;
  std::apply([&](const auto&... v) { figures_ok = ((std::isfinite(v) && v >= 0) && ...); }, figures(m));
  if (!figures_ok) return fail("fleet request: a figure that is not a finite non-negative number");
  if (m.shards < 1 || m.shards > 64 || m.shard >= m.shards)
    return fail("fleet request: shard " + std::to_string(m.shard) + " of " + std::to_string(m.shards));
  if (m.min_devices < 0 || m.min_devices > max_quorum) return fail("fleet request: a quorum out of range");
  if (!(m.ps_flops > 0 && m.ps_egress > 0 && m.heartbeat > 0 && m.heartbeat <= 60 && m.tile_timeout > 0
        && m.replicate <= 1 && m.ps_tile_seconds <= 1))
    return fail("fleet request: a figure out of range");
  if (m.wire > static_cast<uint8_t>(last_wire_precision)) return fail("fleet request: an unknown wire precision " + std::to_string(m.wire));
  if (m.max_tiles_per_device < 1 || m.max_tiles_per_device > 1 << 16 || m.quarantine_after < 1)
    return fail("fleet request: tiles per device or the quarantine threshold out of range");
  return got;
}

std::vector<char> encode_shard_edge(const std::string& address) {
  return wire::encode(wire::text(address, max_edge_address_bytes));
}

caf::expected<std::string> decode_shard_edge(const char* data, size_t size) {
  std::string address;
  if (!wire::decode_exact(data, size, wire::text(address, max_edge_address_bytes)) || address.empty())
    return fail("fleet answer: malformed edge address");
  return address;
}

}  // namespace cleave
