#pragma once
// Devices fed by shard processes (README "Parameter-server shards", phase 3).
//
// Shard side: a `--role=ps-shard --edge=HOST:PORT` process opens a device
// edge of its own when its coordinator's `fleet` request comes (the same
// edge code, TLS and limits as the ps's), with its own planner and detector,
// and runs its slice products on a distributed engine over the devices
// connected there: the engine in-process shards use, as shard s of S. Its
// edge admits a device only with the proof of the coordinator's welcome
// (schema/job_proof.hpp).
//
// Coordinator side: `--role=ps --shards=... --listen=...` sends each shard
// the fleet request (the job's secret, s, S, the cost model's figures),
// then opens its own edge, whose welcome names every shard's edge.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/ps/engine/distributed_gemm.hpp"
#include "actors/ps/shards/shard_devices.hpp"
#include "cmd/options.hpp"
#include "cmd/wiring.hpp"
#include "schema/shard_fleet_codec.hpp"

namespace cleave {

class shard_fleet final : public shard_devices {
 public:
  // `edge`: --edge as given. The fleet request's figures are written into
  // `cfg` (the shard's own --pace-ps-link, --ps-egress and --ps-ingress win).
  shard_fleet(caf::actor_system& sys, cleave_config& cfg, std::string edge);
  ~shard_fleet() override;

  caf::expected<std::vector<char>> configure(const char* data, size_t size) override;
  gemm_engine<float>* engine() override { return engine_.get(); }
  caf::error begin_step() override;
  void add_stats(shard_stats& s) override;

 private:
  caf::actor_system& sys_;
  cleave_config& cfg_;
  std::string edge_at_;
  std::optional<shard_fleet_msg> job_;
  std::string answer_;  // the edge's address, once open
  caf::actor supervisor_;
  std::optional<edge_endpoint> edge_;
  std::unique_ptr<distributed_gemm> engine_;
  uint64_t step_ = 0;
  // The job's secret, read by the edge's gateway on its own thread.
  std::shared_ptr<std::mutex> secret_mu_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::string> secret_ = std::make_shared<std::string>();
};

// The coordinator's side, run once its shards are reached: each gets the
// fleet request; returns their edges' addresses ("host:port"; a shard that
// listens on every interface is dialled at the host the coordinator reached
// it on). configure_shard does it for shard s of `count`.
class remote_shard;
caf::expected<std::string> configure_shard(const cleave_config& cfg, remote_shard& shard, size_t s, size_t count,
                                           const std::string& secret);
caf::expected<std::vector<std::string>> configure_shard_fleet(const cleave_config& cfg,
                                                              const std::vector<remote_shard*>& shards,
                                                              const std::string& secret);

// --role=ps --shards=... --listen=...: the coordinator with its planner,
// detector and device edge (whose welcome names the shards' edges).
int coordinate_shard_fleet(cleave_config& cfg, const train_options& opts, int threads,
                           const std::vector<std::pair<std::string, uint16_t>>& shards);

}  // namespace cleave
