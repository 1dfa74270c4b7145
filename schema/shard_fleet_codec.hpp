#pragma once
// The `fleet` request a coordinator sends a shard process with a device edge
// before its first step (schema/shard_codec.hpp lists it), and the answer:
// what the shard's own planner and engine need to plan and run its slices'
// products as the in-process shard s of S would (the cost model's figures,
// the tile schedule's and verification's settings, the first step's quorum),
// and the job's secret its edge admits devices by
// (schema/job_proof.hpp). The answer is the address devices dial
// for the shard's edge. Fixed little-endian fields; every value is checked
// on decode: a frame comes from a socket.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace cleave {

struct shard_fleet_msg {
  uint32_t shard = 0;
  uint32_t shards = 1;
  int32_t min_devices = 0;
  double ps_flops = 0, ps_egress = 0, ps_ingress = 0;
  double heartbeat = 0.1, suspect_phi = 3, dead_phi = 8;
  double tile_timeout = 30, speculate = 3, replicate = 0;
  double ps_tile_seconds = 0;
  int32_t max_tiles_per_device = 4, quarantine_after = 3;
  bool trust_results = false;
  std::string secret;  // job_secret_bytes
  // --wire, as wire_precision's value: a tail after the secret, sent only
  // when not fp32, so an fp32 job's frame is what it was before the flag.
  uint8_t wire = 0;
};

std::vector<char> encode(const shard_fleet_msg& m);
caf::expected<shard_fleet_msg> decode_shard_fleet(const char* data, size_t size);

// The fleet answer: "host:port" of the shard's device edge.
std::vector<char> encode_shard_edge(const std::string& address);
caf::expected<std::string> decode_shard_edge(const char* data, size_t size);

}  // namespace cleave
