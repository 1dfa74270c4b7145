#include "cmd/fleet_job.hpp"

#include "schema/wire_precision.hpp"

namespace cleave {

shard_fleet_msg fleet_job(const cleave_config& cfg, std::string secret) {
  shard_fleet_msg m;
  m.min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
  m.ps_flops = cfg.ps_flops;
  m.ps_tile_seconds = cfg.ps_tile_seconds;
  m.ps_egress = cfg.ps_egress;
  m.ps_ingress = cfg.ps_ingress;
  m.heartbeat = cfg.heartbeat;
  m.suspect_phi = cfg.suspect_phi;
  m.dead_phi = cfg.dead_phi;
  m.tile_timeout = cfg.tile_timeout;
  m.speculate = cfg.speculate;
  m.replicate = cfg.replicate;
  m.max_tiles_per_device = cfg.max_tiles_per_device;
  m.quarantine_after = cfg.quarantine_after;
  m.trust_results = cfg.trust_results;
  if (auto w = parse_wire_precision(cfg.wire)) m.wire = static_cast<uint8_t>(*w);
  m.secret = std::move(secret);
  return m;
}

void take_fleet_job(cleave_config& cfg, const shard_fleet_msg& job) {
  cfg.ps_flops = job.ps_flops;
  cfg.ps_tile_seconds = job.ps_tile_seconds;
  if (!cfg.pace_ps_link) {
    cfg.ps_egress = job.ps_egress;
    cfg.ps_ingress = job.ps_ingress;
  }
  cfg.heartbeat = job.heartbeat;
  cfg.suspect_phi = job.suspect_phi;
  cfg.dead_phi = job.dead_phi;
  cfg.max_tiles_per_device = job.max_tiles_per_device;
  cfg.ps_shards = static_cast<int>(job.shards);
  cfg.tile_timeout = job.tile_timeout;
  cfg.speculate = job.speculate;
  cfg.replicate = job.replicate;
  cfg.trust_results = job.trust_results;
  cfg.wire = to_string(static_cast<wire_precision>(job.wire));  // decode refused any other byte
  cfg.quarantine_after = job.quarantine_after;
}

}  // namespace cleave
