#pragma once
// Devices fed by shard processes (docs/PS_SHARDS.md, phase 3).
//
// Shard side: a `--role=ps-shard --edge=HOST:PORT` process opens a device
// edge of its own when its coordinator's `fleet` request comes, with its
// own planner and detector, and runs its slice products on a distributed
// engine over the devices connected there: the engine in-process shards
// use, as shard s of S. Its edge admits a device only with the proof of the
// coordinator's welcome (schema/job_proof.hpp). How the edge opens
// is the process's wiring; what a request means is here.
//
// Coordinator side: `--role=ps --shards=... --listen=...` sends each shard
// the fleet request (the job's secret, s, S, the cost model's figures),
// then opens its own edge, whose welcome names every shard's edge.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/ps/engine/distributed_gemm.hpp"
#include "actors/ps/shards/shard_devices.hpp"
#include "schema/shard_fleet_codec.hpp"

namespace cleave {

class remote_shard;

// What feeds a shard's devices once its job is known.
struct shard_fleet_site {
  std::unique_ptr<distributed_gemm> engine;  // over the devices at the edge
  std::string address;                       // the edge's "host:port", as the shard answers it
  std::function<void()> close;               // the edge, then the planner and detector behind it
};

// Opens the site for `job` (its figures, and its secret that the edge's
// devices must prove); a failure leaves nothing half-started, so that the
// coordinator may ask again.
using open_shard_site = std::function<caf::expected<shard_fleet_site>(const shard_fleet_msg& job)>;

class shard_fleet final : public shard_devices {
 public:
  explicit shard_fleet(open_shard_site open) : open_(std::move(open)) {}
  ~shard_fleet() override;

  caf::expected<std::vector<char>> configure(const char* data, size_t size) override;
  gemm_engine<float>* engine() override { return site_.engine.get(); }
  caf::error begin_step() override;
  void add_stats(shard_stats& s) override;

 private:
  open_shard_site open_;
  std::optional<shard_fleet_msg> job_;
  shard_fleet_site site_;
  uint64_t step_ = 0;
};

// The coordinator's side, run once its shards are reached: each gets `job`
// as shard s of their count; returns their edges' addresses ("host:port";
// a shard that listens on every interface is dialled at the host the
// coordinator reached it on). configure_shard does it for shard s of `count`.
caf::expected<std::string> configure_shard(shard_fleet_msg job, remote_shard& shard, size_t s, size_t count);
caf::expected<std::vector<std::string>> configure_shard_fleet(const shard_fleet_msg& job,
                                                              const std::vector<remote_shard*>& shards);

}  // namespace cleave
