// --role=ps: the coordinating parameter server. With --listen it hosts the
// planner and detector and devices join it; with --planner it uses a planner
// process and registers its bulk channel there.

#include <mutex>
#include <optional>

#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "cmd/roles.hpp"
#include "cmd/training_run.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

// Tells `planner` where the ps's bulk channel is and the key its tickets are
// made with; the planner takes it only with the secret it was started with.
caf::error register_bulk(caf::actor_system& sys, const caf::actor& planner, const cleave_config& cfg,
                         const bulk_endpoint& bulk) {
  caf::error refused;
  caf::scoped_actor self{sys};
  const auto& key = bulk.admission.bytes;
  self->request(planner, std::chrono::seconds(30), bulk_atom::value, cfg.ps_secret, cfg.bulk_host,
                bulk.listener.port, std::vector<uint8_t>(key.begin(), key.end()))
    .receive([](caf::ok_atom) {}, [&](caf::error& err) { refused = std::move(err); });
  return refused;
}

// A ps whose planner (and detector) run as their own processes. With
// --bulk-host it opens its bulk channel there and registers it with the
// planner, which tells joining --bulk devices where to find it. A planner
// process that restarts at the same address is found again, and the channel
// registered with it again, by the shards' engines when they lose it.
int run_with_planner_process(cleave_config& cfg, const train_options& opts, int threads, int min_devices) {
  auto at = parse_endpoint(cfg.planner, "planner", false);
  if (!at) return usage_error(describe(at.error()));
  if (!cfg.bulk_host.empty() && cfg.ps_secret.empty())
    return usage_error("--bulk-host needs --ps-secret, the one the planner was started with");
  caf::actor_system sys{cfg};
  auto planner = sys.middleman().remote_actor(at->first, at->second);
  if (!planner)
    return runtime_error("cannot reach the planner at " + cfg.planner + ": " + sys.render(planner.error()));
  spdlog::info("ps: using the planner at {}", cfg.planner);
  std::optional<bulk_endpoint> bulk;
  if (!cfg.bulk_host.empty()) {
    auto opened = open_bulk_endpoint(sys, cfg.bulk_host, cfg.bulk_port);
    if (!opened) return runtime_error(describe(opened.error()));
    bulk = std::move(*opened);
    if (auto refused = register_bulk(sys, *planner, cfg, *bulk)) {
      bulk->close();
      return runtime_error("the planner did not take the bulk channel: " + sys.render(refused));
    }
    spdlog::info("ps: bulk channel registered at {}:{}", cfg.bulk_host, bulk->listener.port);
  }
  // Called by every shard's engine, from its own thread, when the planner is lost.
  std::mutex finding;
  caf::actor current = *planner;
  auto find_planner = [&]() -> caf::actor {
    std::lock_guard<std::mutex> guard{finding};
    auto next = reach(sys, *at, 2.0);
    if (!next) return {};
    if (*next == current) return current;
    if (bulk) {
      if (auto refused = register_bulk(sys, *next, cfg, *bulk)) {
        spdlog::warn("ps: the restarted planner did not take the bulk channel: {}", sys.render(refused));
        return {};
      }
      spdlog::info("ps: bulk channel registered again with the restarted planner");
    }
    current = *next;
    return current;
  };
  // The detector is the planner's business here: the console shows the registry only.
  auto console = start_console(sys, cfg, [&] {
    std::lock_guard<std::mutex> guard{finding};
    return current;
  }, {});
  if (!console) {
    if (bulk) bulk->close();
    return runtime_error(describe(console.error()));
  }
  fleet_run run;
  run.planner = *planner;
  run.devices = min_devices;
  if (bulk) run.gateway = bulk->gateway;
  run.find_planner = find_planner;
  run.console = *console;
  const int rc = train_on_fleet(sys, cfg, opts, threads, run);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  if (bulk) bulk->close();
  return rc;
}

}  // namespace

int run_ps(cleave_config& cfg, const train_options& opts, int threads) {
  const int min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
  if (!cfg.planner.empty()) return run_with_planner_process(cfg, opts, threads, min_devices);
  if (!cfg.bulk_host.empty())
    return usage_error("--bulk-host is for a ps with --planner; with --listen the bulk channel "
                       "listens on the --listen host");
  auto endpoint = parse_endpoint(cfg.listen, "listen", true);
  if (!endpoint) return usage_error(describe(endpoint.error()));
  caf::actor_system sys{cfg};
  // Devices that join with --bulk take their tiles over this channel, once
  // their planner-issued ticket proves their id.
  auto bulk = open_bulk_endpoint(sys, endpoint->first, cfg.bulk_port);
  if (!bulk) return runtime_error(describe(bulk.error()));
  const uint16_t bulk_port = bulk->listener.port;
  auto supervisor = start_supervisor(sys, control_plane(cfg, min_devices, bulk_port, bulk->admission));
  auto planner = registered(sys, "planner");
  const char* host = endpoint->first.empty() ? nullptr : endpoint->first.c_str();
  auto port = sys.middleman().publish(planner, endpoint->second, host, true);
  auto shutdown = [&] {
    stop(supervisor);
    bulk->close();
  };
  if (!port) {
    shutdown();
    return runtime_error("cannot listen on " + cfg.listen + ": " + sys.render(port.error()));
  }
  auto& system = sys;
  auto console = start_console(sys, cfg, [&system] { return registered(system, "planner"); },
                               [&system] { return registered(system, "detector"); });
  if (!console) {
    shutdown();
    return runtime_error(describe(console.error()));
  }
  spdlog::info("ps: listening on port {} (bulk channel {}), waiting for {} device(s)", *port,
               bulk_port, min_devices);
  fleet_run run;
  run.planner = planner;
  run.devices = min_devices;
  run.gateway = bulk->gateway;
  run.console = *console;
  const int rc = train_on_fleet(sys, cfg, opts, threads, run);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  shutdown();
  return rc;
}

}  // namespace cleave
