#pragma once
// What a `--role=ps-shard` process with a device edge (--edge) adds to its
// shard_service: a distributed engine over the devices connected to that
// edge, set up by the coordinator's `fleet` request
// (schema/shard_fleet_codec.hpp). The service stays pure: this interface is
// all it knows of actors, and actors/ps/shards/shard_fleet.hpp implements it.

#include <cstddef>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "kernels/gemm.hpp"
#include "schema/shard_codec.hpp"

namespace cleave {

class shard_devices {
 public:
  virtual ~shard_devices() = default;
  // The fleet request: opens the edge to devices and starts the engine;
  // answers the edge's address (encode_shard_edge).
  virtual caf::expected<std::vector<char>> configure(const char* data, size_t size) = 0;
  // The engine the slice products run on; null until configured.
  virtual gemm_engine<float>* engine() = 0;
  // A training step begins (the coordinator zeroes the gradients).
  virtual caf::error begin_step() = 0;
  // The engine's counts into the stats answer.
  virtual void add_stats(shard_stats& s) = 0;
};

}  // namespace cleave
