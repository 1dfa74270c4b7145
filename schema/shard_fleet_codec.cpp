#include "schema/shard_fleet_codec.hpp"

#include <cmath>

#include "schema/byte_io.hpp"
#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr size_t secret_bytes = 32;  // job_proof.hpp's job_secret_bytes
constexpr size_t fleet_bytes = 4 + 4 + 4 + 10 * 8 + 4 + 4 + 1 + 2 + secret_bytes;
constexpr int32_t max_quorum = 1 << 20;

}  // namespace

std::vector<char> encode(const shard_fleet_msg& m) {
  std::vector<char> out(fleet_bytes - secret_bytes + m.secret.size());
  byte_writer w(out.data());
  w.put(m.shard);
  w.put(m.shards);
  w.put(m.min_devices);
  for (double v : {m.ps_flops, m.ps_egress, m.ps_ingress, m.heartbeat, m.suspect_phi, m.dead_phi, m.tile_timeout,
                   m.speculate, m.replicate, m.ps_tile_seconds})
    w.put(v);
  w.put(m.max_tiles_per_device);
  w.put(m.quarantine_after);
  w.put(static_cast<uint8_t>(m.trust_results ? 1 : 0));
  w.text(m.secret);
  return out;
}

caf::expected<shard_fleet_msg> decode_shard_fleet(const char* data, size_t size) {
  if (size != fleet_bytes) return fail("fleet request: " + std::to_string(size) + " bytes, not " + std::to_string(fleet_bytes));
  byte_reader r(data, size);
  shard_fleet_msg m;
  uint8_t trust = 0;
  r.get(m.shard);
  r.get(m.shards);
  r.get(m.min_devices);
  for (double* v : {&m.ps_flops, &m.ps_egress, &m.ps_ingress, &m.heartbeat, &m.suspect_phi, &m.dead_phi,
                    &m.tile_timeout, &m.speculate, &m.replicate, &m.ps_tile_seconds})
    if (!r.get(*v) || !std::isfinite(*v) || *v < 0) return fail("fleet request: a figure that is not a finite non-negative number");
  r.get(m.max_tiles_per_device);
  r.get(m.quarantine_after);
  r.get(trust);
  if (!r.text(m.secret, secret_bytes) || m.secret.size() != secret_bytes || r.left() != 0)
    return fail("fleet request: the job's secret is not " + std::to_string(secret_bytes) + " bytes");
  m.trust_results = trust != 0;
  if (m.shards < 1 || m.shards > 64 || m.shard >= m.shards)
    return fail("fleet request: shard " + std::to_string(m.shard) + " of " + std::to_string(m.shards));
  if (m.min_devices < 0 || m.min_devices > max_quorum) return fail("fleet request: a quorum out of range");
  if (!(m.ps_flops > 0 && m.ps_egress > 0 && m.heartbeat > 0 && m.heartbeat <= 60 && m.tile_timeout > 0
        && m.replicate <= 1 && m.ps_tile_seconds <= 1))
    return fail("fleet request: a figure out of range");
  if (m.max_tiles_per_device < 1 || m.max_tiles_per_device > 1 << 16 || m.quarantine_after < 1)
    return fail("fleet request: tiles per device or the quarantine threshold out of range");
  return m;
}

std::vector<char> encode_shard_edge(const std::string& address) {
  const std::string cut = address.substr(0, max_edge_address_bytes);
  std::vector<char> out(2 + cut.size());
  byte_writer(out.data()).text(cut);
  return out;
}

caf::expected<std::string> decode_shard_edge(const char* data, size_t size) {
  byte_reader r(data, size);
  std::string address;
  if (!r.text(address, max_edge_address_bytes) || address.empty() || r.left() != 0)
    return fail("fleet answer: malformed edge address");
  return address;
}

}  // namespace cleave
