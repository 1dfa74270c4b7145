// --role=ps --shards=...: the coordinator of --role=ps-shard processes. It
// runs the row-wise ops and the data; each shard owns its slices and
// computes its products. With --listen it also welcomes devices and sends
// them to the shards' own edges (actors/ps/shards/shard_fleet.hpp).

#include <optional>

#include <spdlog/spdlog.h>

#include "schema/job_proof.hpp"
#include "actors/planner/fleet_roster.hpp"
#include "actors/ps/shards/remote_shard.hpp"
#include "actors/ps/shards/shard_fleet.hpp"
#include "cmd/fleet_job.hpp"
#include "cmd/roles.hpp"
#include "cmd/training_run.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

// The coordinator with its planner, detector and device edge (whose
// welcome names the shards' edges).
int coordinate_shard_fleet(cleave_config& cfg, const train_options& opts, int threads,
                           const std::vector<std::pair<std::string, uint16_t>>& shards) {
  // With checkpoints the secret is kept beside them: a coordinator restarted
  // with --resume is then the same job to its shards (which kept waiting for
  // it) and to the devices' proofs.
  auto secret = opts.checkpoint_dir.empty() ? make_job_secret() : kept_job_secret(opts.checkpoint_dir, cfg.resume);
  if (!secret) return runtime_error(describe(secret.error()));
  const auto job = fleet_job(cfg, *secret);
  caf::actor_system sys{cfg};
  // The coordinator's planner only welcomes devices: the shards' planners
  // plan, and each waits for the quorum before its first step.
  auto supervisor = start_supervisor(sys, control_plane(cfg, 0));
  auto& system = sys;
  auto planner = [&system] { return registered(system, "planner"); };
  std::optional<edge_endpoint> edge;
  std::vector<std::string> edges;
  shard_process_hooks hooks;
  hooks.before_training = [&](const std::vector<remote_shard*>& remotes) -> caf::error {
    auto configured = configure_shard_fleet(job, remotes);
    if (!configured) return configured.error();
    edges = std::move(*configured);
    auto adjust = [&](edge_options& eo) {
      eo.shard_edges = edges;
      eo.prove = [key = *secret](int32_t id) { return prove_device(key, id); };
    };
    auto opened = open_edge(sys, cfg, planner, adjust);
    if (!opened) return opened.error();
    edge = *opened;
    spdlog::info("ps: listening on port {} (the device edge: devices join here and are sent to {} PS shard(s)), "
                 "waiting for {} device(s)", edge->listener.port, remotes.size(), cfg.min_devices >= 0 ? cfg.min_devices : 1);
    return caf::none;
  };
  // A shard process started in place of a lost one gets the same job (the
  // same secret, so the devices' proofs hold); the devices dial the edge the
  // welcome named again, so it must listen there.
  hooks.shard_back = [&](size_t s, remote_shard& shard) -> caf::error {
    auto at = configure_shard(job, shard, s, shards.size());
    if (!at) return at.error();
    if (s < edges.size() && *at != edges[s])
      return caf::make_error(caf::sec::invalid_argument,
                             "PS shard " + std::to_string(s) + " came back with its device edge at " + *at + ", not at "
                               + edges[s] + " where the devices look for it: start it again with --edge=" + edges[s]);
    spdlog::info("ps: PS shard {} feeds devices at {} again", s, *at);
    return caf::none;
  };
  // The console shows the devices the coordinator welcomed and each shard's
  // side of the run (its stats, asked for as the run goes).
  auto console = start_console(sys, cfg, planner, [&system] { return registered(system, "detector"); });
  if (!console) {
    stop(supervisor);
    return runtime_error(describe(console.error()));
  }
  hooks.console = *console;
  spdlog::info("ps: coordinating {} PS shard process(es) that feed devices", shards.size());
  const int rc = train_with_shard_processes(sys, cfg, opts, threads, shards, hooks);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  tell_devices_run_over(sys, planner());
  if (edge) edge->close();
  stop(supervisor);
  return rc;
}

}  // namespace

int run_ps_coordinator(cleave_config& cfg, const train_options& opts, int threads) {
  auto shards = parse_shard_list(cfg.shards);
  if (!shards) return usage_error(describe(shards.error()));
  if (cfg.ps_shards > 1)
    return usage_error("--shards names the shard processes; --ps-shards=" + std::to_string(cfg.ps_shards)
                       + " makes shards inside this process: use one or the other");
  if (opts.model.kind == "xc")
    return usage_error("--model=xc keeps its output layer as model-lets, not PS shards: --shards is for mlp and gpt");
  // Devices join the coordinator's edge (--listen) and take tiles from the
  // shards' edges; emulated devices, a planner process and pacing here are
  // not in this build (a shard paces its own link).
  if (!cfg.planner.empty() || !cfg.fleet.empty() || cfg.devices > 0 || cfg.pace_ps_link)
    return usage_error("--role=ps with --shards takes device processes at --listen (fed by shards started with "
                       "--edge); --planner, --fleet, --devices and --pace-ps-link are not in this build "
                       "(give --pace-ps-link to the shard processes)");
  if (!cfg.listen.empty()) return coordinate_shard_fleet(cfg, opts, threads, *shards);
  if (cfg.min_devices > 0) return usage_error("--min-devices with --shards needs --listen (the device edge)");
  caf::actor_system sys{cfg};
  spdlog::info("ps: coordinating {} PS shard process(es), no devices", shards->size());
  shard_process_hooks hooks;
  auto console = start_console(sys, cfg, [] { return caf::actor{}; }, [] { return caf::actor{}; });
  if (!console) return runtime_error(describe(console.error()));
  hooks.console = *console;
  const int rc = train_with_shard_processes(sys, cfg, opts, threads, *shards, hooks);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  return rc;
}

}  // namespace cleave
