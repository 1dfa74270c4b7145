// The `cleave` binary: parses flags, then wires the roles this process runs.

#include <cstdlib>
#include <iostream>
#include <string_view>
#include <thread>

#include <malloc.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/detector/heartbeat_interval.hpp"
#include "actors/transport/fd_limit.hpp"
#include "cmd/options.hpp"
#include "cmd/roles.hpp"
#include "kernels/row_parts.hpp"
#include "schema/errors.hpp"
#include "schema/wire_precision.hpp"

using namespace cleave;

namespace {

// CAF renders a CLI error as parser_error(code, ({"argument" = "--x=y"})):
// turn that into a sentence naming the argument.
std::string explain_parse_error(const std::string& rendered) {
  std::string arg;
  auto at = rendered.find("\"argument\" = \"");
  if (at != std::string::npos) {
    at += 14;
    arg = rendered.substr(at, rendered.find('"', at) - at);
  }
  if (arg.empty()) return rendered;
  if (rendered.find("not_an_option") != std::string::npos) return "unknown flag '" + arg + "'";
  return "invalid value in '" + arg + "'";
}

// libgomp reads its spin count once, before main. By default an OpenMP
// worker spins 300,000 times (milliseconds) after every parallel region, so
// while the PS waits on its devices a core stays busy doing nothing. When the
// fleet is emulated in this process, that core is the devices'. Runs the
// binary again with a short spin unless the user chose a policy; if exec
// fails, carries on as it is.
void shorten_omp_spins_for_emulated_devices(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GOMP_SPINCOUNT");
}

// Tiles, results and snapshots are megabytes each and come and go every
// GEMM. glibc would serve some from fresh mmaps and hand freed heap tops
// back to the kernel, so the next tile page-faults its buffer in again (a
// tenth of the PS's CPU at 16 emulated devices). Kept mapped, the memory
// is reused.
void keep_freed_memory_mapped() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

bool sets_scheduler_policy(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view{argv[i]}.find("scheduler.policy") != std::string_view::npos) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory_mapped();
  cleave_config cfg;
  if (auto err = cfg.parse(argc, argv))
    return usage_error(explain_parse_error(cfg.render(err)));
  if (cfg.cli_helptext_printed) return 0;
  if (auto err = resolve_defaults(cfg)) return usage_error(describe(err));

  auto level = spdlog::level::from_str(cfg.log_level);
  if (level == spdlog::level::off && cfg.log_level != "off")
    return usage_error("--log-level: unknown level '" + cfg.log_level + "'");
  spdlog::set_level(level);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  // A client of another process's console: no training options apply.
  if (cfg.role == "status") return run_status(cfg);
  if (cfg.watch) return usage_error("--watch is for --role=status");

  auto opts = to_train_options(cfg);
  if (!opts) return usage_error(describe(opts.error()));
  if (cfg.threads < 0) return usage_error("--threads must be >= 0");
  const int threads = cfg.threads > 0 ? cfg.threads
                                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_compute_threads(threads);
  if (cfg.ps_op_threads < 1 || cfg.ps_op_threads > 4096) return usage_error("--ps-op-threads must be 1 to 4096");
  set_pass_threads(cfg.ps_op_threads);

  cfg.set("scheduler.max-threads", threads);
  if (cfg.devices < 0) return usage_error("--devices must be >= 0");
  if (cfg.ps_shards < 1 || cfg.ps_shards > cleave_config::max_ps_shards)
    return usage_error("--ps-shards must be in [1, " + std::to_string(cleave_config::max_ps_shards) + "], got "
                       + std::to_string(cfg.ps_shards));
  if (cfg.max_tiles_per_device < 1) return usage_error("--max-tiles-per-device must be >= 1");
  if (!(cfg.tile_timeout > 0) || !(cfg.heartbeat > 0) || !(cfg.ps_flops > 0) || !(cfg.ps_egress > 0))
    return usage_error("--tile-timeout, --heartbeat, --ps-flops and --ps-egress must be positive");
  if (!(cfg.ps_ingress >= 0)) return usage_error("--ps-ingress must be >= 0 (0: as --ps-egress)");
  if (!(cfg.ps_tile_seconds >= 0 && cfg.ps_tile_seconds <= 1))
    return usage_error("--ps-tile-seconds must be in [0, 1]");
  if (!cfg.shards.empty() && cfg.role != "ps")
    return usage_error("--shards is for --role=ps (the coordinator of --role=ps-shard processes)");
  if (cfg.unpaced_devices && cfg.role != "all") return usage_error("--unpaced-devices applies to --role=all only");
  if (cfg.pace_ps_link && cfg.role != "all" && cfg.role != "ps" && !(cfg.role == "ps-shard" && !cfg.edge.empty()))
    return usage_error("--pace-ps-link is for --role=all and --role=ps, and --role=ps-shard with --edge: whoever sends the tiles");
  if (!cfg.edge.empty() && cfg.role != "ps-shard")
    return usage_error("--edge is for --role=ps-shard (its own device edge); the ps's device edge is --listen");
  if (!(cfg.churn_rate >= 0 && cfg.churn_rate <= 100)) return usage_error("--churn-rate must be in [0, 100]");
  if (!cfg.wire.empty()) {
    auto wire = parse_wire_precision(cfg.wire);
    if (!wire) return usage_error(describe(wire.error()));
    if (*wire != wire_precision::fp32 && cfg.role != "simulate" && cfg.role != "all" && cfg.role != "ps")
      return usage_error("--wire=" + cfg.wire + " is for --role=all, ps and simulate: the ps decides, shard processes "
                         "take it from the coordinator's job and devices from their tasks");
  }
  if (cfg.ps_link_model != "fair" && cfg.ps_link_model != "scheduled")
    return usage_error("--ps-link-model must be fair or scheduled, not '" + cfg.ps_link_model + "'");
  if ((cfg.ps_link_model != "fair" || cfg.attention_tiles) && cfg.role != "simulate")
    return usage_error("--ps-link-model and --attention-tiles are for --role=simulate: the live PS "
                       "computes attention itself and leaves its link's sharing to TCP");
  if (!cfg.churn.empty() && cfg.churn_rate > 0) return usage_error("use --churn or --churn-rate, not both");
  if ((!cfg.churn.empty() || cfg.churn_rate > 0) && cfg.role != "all" && cfg.role != "simulate")
    return usage_error("--churn and --churn-rate emulate churn in the in-process fleet (--role=all) "
                       "or in virtual time (--role=simulate); kill real device processes instead");
  if (!cfg.byzantine.empty() && (cfg.role != "all" || (cfg.devices == 0 && cfg.fleet.empty())))
    return usage_error("--byzantine gives lies to the in-process fleet (--role=all with --devices or --fleet); "
                       "a device process takes --lie");
  if (!cfg.lie.empty() && cfg.role != "device")
    return usage_error("--lie is for --role=device (tests only); the in-process fleet takes --byzantine=FILE");
  if (!(cfg.speculate >= 0)) return usage_error("--speculate must be >= 0");
  if (!(cfg.replicate >= 0 && cfg.replicate <= 1)) return usage_error("--replicate must be in [0, 1]");
  if (cfg.quarantine_after < 1) return usage_error("--quarantine-after must be at least 1");
  if (!(cfg.suspect_phi > 0 && cfg.dead_phi > cfg.suspect_phi))
    return usage_error("--suspect-phi must be positive and below --dead-phi");
  if (cfg.failure_policy != "continue" && cfg.failure_policy != "restart")
    return usage_error("--failure-policy must be continue or restart");
  if (!(cfg.reconnect_seconds >= 0)) return usage_error("--reconnect-seconds must be >= 0");
  if (cfg.max_devices < 1 || cfg.max_devices > cleave_config::max_max_devices)
    return usage_error("--max-devices must be in [1, " + std::to_string(cleave_config::max_max_devices) + "]");
  if (!(cfg.heartbeat_rate >= 0)) return usage_error("--heartbeat-rate must be >= 0 (0: no budget)");
  if (cfg.role != "device") {  // a device takes its interval from the welcome
    const double asked = cfg.heartbeat;
    cfg.heartbeat = fleet_heartbeat_seconds(asked, static_cast<size_t>(cfg.max_devices), cfg.heartbeat_rate);
    if (cfg.heartbeat != asked)
      spdlog::info("heartbeats every {:.3g} s, not {:.3g}: {} devices at most send {:.0f}/s "
                   "(--max-devices, --heartbeat-rate)", cfg.heartbeat, asked, cfg.max_devices,
                   fleet_heartbeat_rate(cfg.heartbeat, static_cast<size_t>(cfg.max_devices)));
  }
  if (cfg.role == "ps" || cfg.role == "ps-shard" || cfg.role == "relay")  // an edge's connections, and room for the rest
    if (auto err = transport::ensure_fd_limit(static_cast<size_t>(cfg.max_devices) + 256))
      spdlog::warn("--max-devices={}: {}", cfg.max_devices, describe(err));
  const int tls_parts = !cfg.tls_cert.empty() + !cfg.tls_key.empty() + !cfg.tls_ca.empty();
  if (tls_parts != 0 && tls_parts != 3) return usage_error("--tls-cert, --tls-key and --tls-ca go together");
  if (!cfg.tls_crl.empty() && tls_parts == 0) return usage_error("--tls-crl needs --tls-cert, --tls-key and --tls-ca");
  if (!cfg.join_tokens.empty() && (!cfg.tls() || cfg.tls_ca_key.empty()))
    return usage_error("--join-tokens needs --tls-cert, --tls-key, --tls-ca and --tls-ca-key (to sign certificates)");
  if (!cfg.join_token.empty() && !cfg.tls())
    return usage_error("--join-token needs --tls-cert, --tls-key and --tls-ca (where the certificate and key go)");
  if (cfg.tls() && cfg.role == "all")
    return usage_error("--tls-* secure links between processes; --role=all has none");
  if (cfg.tls()) {  // CAF's mutual TLS for the server-side BASP links
    cfg.openssl_certificate = cfg.tls_cert;
    cfg.openssl_key = cfg.tls_key;
    cfg.openssl_cafile = cfg.tls_ca;
  }
  if (cfg.role == "simulate") {
    for (int i = 1; i < argc; ++i)
      cfg.vocab_given = cfg.vocab_given || std::string_view{argv[i]}.rfind("--vocab", 0) == 0;
    return run_simulate(cfg, *opts);
  }
  if (cfg.role == "all") {
    if (cfg.devices > 0 || !cfg.fleet.empty()) {
      shorten_omp_spins_for_emulated_devices(argv);
      // Emulated devices get their tiles in bursts from a thread outside the
      // scheduler. A shared queue wakes an idle worker at once; work stealing
      // leaves work queued behind a busy worker while the other sleeps
      // between polls (bench/runtime: 1.65-1.70x -> 1.43-1.54x the reference).
      if (!sets_scheduler_policy(argc, argv)) cfg.set("scheduler.policy", caf::atom("sharing"));
      // One worker more than the compute threads. A tile is indivisible on
      // its worker, so with one worker per core a GEMM's last tiles run on
      // one core while the other waits, and the PS's own thread (issuing
      // and checking) takes a core from a worker whenever it runs; a third
      // worker on two cores lets the kernel share the cores among the tiles
      // left (bench/runtime, 9 interleaved rounds: 16 devices 1.55-1.95x ->
      // 1.48-1.58x the reference, 64 devices 1.70-1.76x -> 1.62-1.63x; four
      // workers were no better than two).
      cfg.set("scheduler.max-threads", threads + 1);
    }
    return run_all(cfg, *opts, threads);
  }
  // An edge's traffic is many small messages (a heartbeat is four actor
  // messages). Work stealing's idle workers poll, sleeping 50 us at a time,
  // and each wake is a context switch: 1,000 swarm devices cost a waiting
  // ps 0.18 of a core that way, 0.06 with a shared queue whose idle workers
  // block (bench/swarm/run.sh).
  if ((cfg.role == "ps" || cfg.role == "ps-shard") && !sets_scheduler_policy(argc, argv))
    cfg.set("scheduler.policy", caf::atom("sharing"));
  if (cfg.role == "ps" && !cfg.shards.empty()) return run_ps_coordinator(cfg, *opts, threads);
  if (cfg.role == "ps") return run_ps(cfg, *opts, threads);
  if (cfg.role == "ps-shard") return run_ps_shard(cfg);
  if (cfg.role == "plan") return run_plan(cfg, *opts);
  if (cfg.role == "device") return run_device(cfg, threads);
  if (cfg.role == "relay") return run_relay(cfg);
  if (cfg.role == "planner" || cfg.role == "detector") return run_service(cfg);
  return usage_error("unknown role '" + cfg.role + "' (expected all, ps, ps-shard, device, relay, planner, detector, status, plan or simulate)");
}
