#pragma once
// Running the training loop from a role: the single-process reference, or a
// run over the fleet a planner keeps, with one engine per PS shard, the
// report at the end, and the devices told that the run is over.

#include <functional>

#include <caf/all.hpp>

#include "actors/churn/churn_protocol.hpp"
#include "actors/console/console_protocol.hpp"
#include "cmd/options.hpp"
#include "schema/profile.hpp"

namespace cleave {

class remote_shard;

// Everything a fleet run is wired to besides the flags.
struct fleet_run {
  caf::actor planner;
  int devices = 0;             // emulated, or the quorum waited for: for the report
  churn_handle churn;          // told every step (in-process churn); may be null
  // Finds the planner's successor after a restart (in-process: the
  // registry; a separate planner process: its address). Empty: a lost
  // planner ends the run.
  std::function<caf::actor()> find_planner;
  console_handle console;      // gets the loop's status; may be null
  // Judges the devices; the report asks it for each device process's peak
  // memory (actors/detector/device_memory_report.hpp). May be null.
  caf::actor detector;
  bool emulated = false;       // in-process devices, pacing their work to their profiles
};

// --devices=0: every GEMM in this process (with --ps-shards shards).
int train_locally(const cleave_config& cfg, const train_options& opts, int threads);
// --model=xc --xc-baseline=data-parallel: dense data-parallel training on
// `fleet`, emulated here (actors/simulator/baselines/live_data_parallel.hpp).
int train_xc_data_parallel(const cleave_config& cfg, const train_options& opts, int threads,
                           const std::vector<device_profile>& fleet);

// Over --role=ps-shard processes at `shards` (host, port): each owns its
// slices and computes its products; this process runs the row-wise ops and
// the data. Unreachable shards end it with the reason; so does a shard lost
// during the run, unless the run checkpoints: then it waits for the shard
// to come back and rolls back to the newest complete checkpoint set, whose
// shard files the shards write and load themselves
// (actors/ps/shards/shard_recovery.hpp). The report's per_shard gives each
// shard's bytes each way and its peak memory.
// `hooks` let a coordinator whose shards feed devices set up their device
// edges: once the shards are reached, and again for a shard process that
// replaced a lost one.
struct shard_process_hooks {
  // Once every shard is reached, before their slices are placed.
  std::function<caf::error(const std::vector<remote_shard*>&)> before_training;
  // A lost shard that listens again (`shard`: its index), before the
  // rollback attaches it. caf::sec::invalid_argument: that process cannot
  // take the shard's place (it is waited for again until the wait is over).
  std::function<caf::error(size_t shard, remote_shard&)> shard_back;
  // The admin console (--admin; null without): the run's status with each
  // shard's per_shard entry, its stats asked for at most twice a second.
  console_handle console;
};
int train_with_shard_processes(caf::actor_system& sys, const cleave_config& cfg, const train_options& opts,
                               int threads, const std::vector<std::pair<std::string, uint16_t>>& shards,
                               const shard_process_hooks& hooks = {});

// Over the planner's fleet. At the end every device the planner knows is
// told the run is over (waiting at most 2 s for their answers).
int train_on_fleet(caf::actor_system& sys, const cleave_config& cfg, const train_options& opts,
                   int threads, const fleet_run& run);

}  // namespace cleave
