// --role=ps: the coordinating parameter server. Devices join it at --listen,
// its device edge: framed, capped and never BASP. It hosts the planner and
// detector itself, or with --planner uses a planner process (and that
// planner's detector) over BASP on the server side.

#include <chrono>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/planner/planner_actor.hpp"
#include "cmd/roles.hpp"
#include "cmd/training_run.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

// What the edge saw during the run, in one line.
void log_edge_counters(caf::actor_system& sys, const caf::actor& gateway) {
  caf::scoped_actor self{sys};
  self->request(gateway, std::chrono::seconds(2), caf::get_atom::value)
    .receive(
      [](const edge_counters& c) {
        spdlog::info("edge: {} connections ({} of relays), {} devices admitted, {} refused at the join, {} "
                     "handshake and {} idle timeouts, {} frames throttled, {} dropped for flooding, {} for "
                     "misbehaving, {} certificates issued",
                     c.connections, c.relays, c.admitted, c.refused, c.handshake_timeouts, c.idle_timeouts,
                     c.throttled_frames, c.dropped_flooding, c.dropped_misbehaving, c.certificates_issued);
      },
      [](caf::error&) {});
}

// A planner process may have outlived an earlier ps: its first quorum was
// reached then, and the devices it still lists may be that ps's, gone with
// it. So a ps over a planner process waits itself until `devices` devices
// have joined the planner through this process's edge (their handles are
// its own proxies), as a ps hosting its planner waits for its quorum.
// `find` reaches the planner again when it does not answer (restarted).
void wait_for_own_devices(caf::actor_system& sys, const std::function<caf::actor()>& planner,
                          const std::function<caf::actor()>& find, int devices) {
  bool said = false;
  for (bool lost = false; !stop_requested();) {
    int here = 0, elsewhere = 0;
    caf::scoped_actor self{sys};
    const caf::actor at = lost ? find() : planner();
    lost = !at;
    if (lost) continue;  // find waited for it already
    self->request(at, std::chrono::seconds(2), caf::get_atom::value)
      .receive(
        [&](uint64_t, bool, const std::vector<fleet_member>& members, const std::vector<int32_t>&,
            const std::vector<int32_t>&) {
          for (const auto& m : members) (m.handle && m.handle.node() == sys.node() ? here : elsewhere) += 1;
        },
        [&](caf::error&) { lost = true; });
    if (here >= devices) return;
    if (elsewhere > 0 && !said) {
      spdlog::info("ps: the planner process lists {} device(s) that did not join through this ps; waiting for {} "
                   "of its own", elsewhere, devices);
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Trains with `run` once the device edge is open; closes it at the end. The
// edge's proxies join devices to `join_planner`; the console shows `planner`.
// With `own_quorum` the ps waits for run.devices devices of its own first.
int train_behind_edge(caf::actor_system& sys, cleave_config& cfg, const train_options& opts, int threads,
                      fleet_run run, std::function<caf::actor()> join_planner,
                      std::function<caf::actor()> planner, std::function<caf::actor()> detector,
                      bool own_quorum = false) {
  auto edge = open_edge(sys, cfg, join_planner);
  if (!edge) return runtime_error(describe(edge.error()));
  auto console = start_console(sys, cfg, planner, detector);
  if (!console) {
    edge->close();
    return runtime_error(describe(console.error()));
  }
  spdlog::info("ps: listening on port {} (the device edge: devices join here), waiting for {} device(s)",
               edge->listener.port, run.devices);
  run.console = *console;
  run.detector = detector ? detector() : caf::actor{};
  if (own_quorum) wait_for_own_devices(sys, planner, join_planner, run.devices);
  const int rc = train_on_fleet(sys, cfg, opts, threads, run);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  log_edge_counters(sys, edge->gateway);
  edge->close();
  return rc;
}

// A ps whose planner (and detector) run as their own processes. A planner
// process that restarts at the same address is found again by the shards'
// engines when they lose it, and by the device proxies when devices join.
int run_with_planner_process(cleave_config& cfg, const train_options& opts, int threads, int min_devices) {
  auto at = parse_endpoint(cfg.planner, "--planner", false);
  if (!at) return usage_error(describe(at.error()));
  caf::actor_system sys{cfg};
  auto planner = remote_service(sys, cfg, *at);
  if (!planner)
    return runtime_error("cannot reach the planner at " + cfg.planner + ": " + sys.render(planner.error()));
  spdlog::info("ps: using the planner at {}", cfg.planner);
  // Called by every shard's engine, from its own thread, when the planner is lost.
  std::mutex finding;
  caf::actor current = *planner;
  auto find_planner = [&]() -> caf::actor {
    std::lock_guard<std::mutex> guard{finding};
    auto next = reach(sys, cfg, *at, 2.0);
    if (next) current = *next;
    return next ? current : caf::actor{};
  };
  auto current_planner = [&]() -> caf::actor {
    std::lock_guard<std::mutex> guard{finding};
    return current;
  };
  fleet_run run;
  run.planner = *planner;
  run.devices = min_devices;
  run.find_planner = find_planner;
  // The console shows the fleet's health from the planner's detector, and
  // the report each device process's memory.
  caf::actor detector;
  {
    caf::scoped_actor self{sys};
    self->request(*planner, std::chrono::seconds(5), detector_atom::value)
      .receive([&](caf::actor d) { detector = std::move(d); },
               [&](caf::error& err) {
                 spdlog::warn("the planner did not name its detector ({}): the console shows the "
                              "registry only, and the report no device's memory", sys.render(err));
               });
  }
  return train_behind_edge(sys, cfg, opts, threads, run, find_planner, current_planner,
                           [detector] { return detector; }, true);
}

}  // namespace

int run_ps(cleave_config& cfg, const train_options& opts, int threads) {
  const int min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
  if (auto endpoint = parse_endpoint(cfg.listen, "--listen", true); !endpoint)
    return usage_error(describe(endpoint.error()));
  if (!cfg.planner.empty()) return run_with_planner_process(cfg, opts, threads, min_devices);
  caf::actor_system sys{cfg};
  auto supervisor = start_supervisor(sys, control_plane(cfg, min_devices));
  auto& system = sys;
  auto planner = [&system] { return registered(system, "planner"); };
  fleet_run run;
  run.planner = planner();
  run.devices = min_devices;
  run.find_planner = planner;  // the supervisor restarts a crashed planner
  const int rc = train_behind_edge(sys, cfg, opts, threads, run, planner, planner,
                                   [&system] { return registered(system, "detector"); });
  stop(supervisor);
  return rc;
}

}  // namespace cleave
