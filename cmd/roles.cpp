#include "cmd/roles.hpp"

#include <atomic>
#include <csignal>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/churn/churn_actor.hpp"
#include "actors/console/console_actor.hpp"
#include "actors/console/http_endpoint.hpp"
#include "actors/detector/detector_actor.hpp"
#include "actors/device/device_actor.hpp"
#include "actors/planner/planner_actor.hpp"
#include "actors/ps/bulk_gateway.hpp"
#include "actors/ps/distributed_gemm.hpp"
#include "actors/ps/runtime_report.hpp"
#include "training/report.hpp"
#include "actors/ps/sharded_ps.hpp"
#include "actors/supervisor/supervisor.hpp"
#include "schema/errors.hpp"
#include "schema/json_file.hpp"

namespace cleave {

int usage_error(const std::string& reason) {
  std::cerr << "cleave: " << reason << " (see --help)\n";
  return 2;
}

int runtime_error(const std::string& reason) {
  std::cerr << "cleave: " << reason << "\n";
  return 1;
}

namespace {

caf::actor registered(caf::actor_system& sys, const char* name) {
  return caf::actor_cast<caf::actor>(sys.registry().get(caf::atom_from_string(name)));
}

// The churn actor's summary (counts, detection latencies) as JSON.
nlohmann::json churn_summary(caf::actor_system& sys, const caf::actor& churn) {
  nlohmann::json out = nlohmann::json::object();
  caf::scoped_actor self{sys};
  self->request(churn, std::chrono::seconds(10), caf::get_atom::value)
    .receive([&](const std::string& text) { out = nlohmann::json::parse(text, nullptr, false); },
             [&](caf::error& err) {
               spdlog::warn("churn actor did not report: {}", sys.render(err));
             });
  return out;
}

// Runs the training loop and writes the report. `fleet` holds one engine per
// PS shard (empty: the local reference, still with --ps-shards shards);
// `churn`, if set, is told every step.
// `console`, if set, gets the loop's status (the report's fleet accounts so
// far) every half second.
int train(const cleave_config& cfg, const train_options& opts, int threads, int devices,
          const std::vector<distributed_gemm*>& fleet, caf::actor churn = {},
          caf::actor console = {}) {
  auto data = load_training_data(opts);
  if (!data) return runtime_error(describe(data.error()));
  std::vector<gemm_engine<float>*> shard_engines(fleet.begin(), fleet.end());
  if (shard_engines.empty())
    shard_engines.assign(static_cast<size_t>(cfg.ps_shards), &default_gemm_engine<float>());
  // One shard: the engine multiplies and a local store updates. More: the
  // sharded PS is both, over the shards' engines.
  std::unique_ptr<sharded_ps> shards;
  local_parameter_store local;
  if (shard_engines.size() > 1) shards = std::make_unique<sharded_ps>(shard_engines);
  trainer t(opts, **data, shards ? static_cast<gemm_engine<float>&>(*shards) : *shard_engines[0],
            shards ? static_cast<parameter_store&>(*shards) : local);
  runtime_accounts training;
  auto fleet_accounts = [&] {
    std::vector<runtime_accounts> per_shard;
    for (auto* engine : fleet) per_shard.push_back(engine->accounts());
    return combine_shards(per_shard);
  };
  if (!fleet.empty()) {
    t.before_step = [&](int64_t step) {
      if (churn) caf::anon_send(churn, churn_atom::value, step + 1);
      caf::error first;
      for (auto* engine : fleet)
        if (auto err = engine->begin_step(static_cast<uint64_t>(step)); err && !first)
          first = std::move(err);
      return first;
    };
    t.after_training = [&] {
      for (auto* engine : fleet) engine->finish_step();
      training = fleet_accounts();
      if (shards) training.totals.allgather_seconds += shards->exchange_seconds();
    };
  }
  const auto started = clock_type::now();
  auto last_status = started - std::chrono::hours(1);
  if (console)
    t.on_step = [&](int64_t step, double loss) {
      if (seconds_since(last_status) < 0.5) return;
      last_status = clock_type::now();
      nlohmann::json status = {{"step", step},
                               {"loss", loss},
                               {"seconds", seconds_since(started)},
                               {"model", to_string(opts.model)},
                               {"devices", devices}};
      add_runtime_report(status, fleet_accounts(), cfg.ps_shards, step);
      caf::anon_send(console, console_status_atom::value, status.dump());
    };
  auto res = t.run();
  if (!res) return runtime_error(describe(res.error()));
  if (!fleet.empty()) {
    uint64_t down = 0, up = 0;
    for (const auto& [id, acct] : training.devices) {
      down += acct.bytes_down;
      up += acct.bytes_up;
    }
    spdlog::info("fleet: {} tiles, {:.1f} MB down, {:.1f} MB up, {} GEMMs kept local",
                 training.tiles, down / 1e6, up / 1e6, training.local_gemms);
  }
  if (!cfg.report.empty()) {
    auto doc = make_report(opts, *res, devices, threads);
    doc["ps_shards"] = cfg.ps_shards;
    if (!fleet.empty())
      add_runtime_report(doc, training, cfg.ps_shards, res->steps - res->resumed_from_step);
    if (churn) doc["churn"] = churn_summary(churn.home_system(), churn);
    if (auto err = write_json_file(cfg.report, doc)) return runtime_error(describe(err));
    spdlog::info("report written to {}", cfg.report);
  }
  return 0;
}

// Training over whatever fleet the planner has: one engine per PS shard.
int train_on_fleet(caf::actor_system& sys, const cleave_config& cfg, const train_options& opts,
                   int threads, caf::actor planner, int devices, caf::actor gateway = {},
                   caf::actor churn = {}, std::function<caf::actor()> find_planner = {},
                   caf::actor console = {}) {
  engine_options eopts;
  eopts.tile_timeout_seconds = cfg.tile_timeout;
  eopts.speculate_factor = cfg.speculate;
  eopts.stop_on_failure = cfg.failure_policy == "restart";
  eopts.find_planner = std::move(find_planner);
  eopts.shards = static_cast<uint32_t>(cfg.ps_shards);
  std::vector<std::unique_ptr<distributed_gemm>> engines;
  std::vector<distributed_gemm*> fleet;
  for (uint32_t s = 0; s < eopts.shards; ++s) {
    eopts.shard = s;
    engines.push_back(std::make_unique<distributed_gemm>(sys, planner, eopts, gateway));
    fleet.push_back(engines.back().get());
  }
  return train(cfg, opts, threads, devices, fleet, std::move(churn), std::move(console));
}

// The admin console (--admin=[host:]port): an actor holding the loop's
// status, asking the planner and detector for the live fleet, behind an
// HTTP endpoint. No actor when --admin is not given.
caf::expected<caf::actor> start_console(caf::actor_system& sys, const cleave_config& cfg,
                                        std::function<caf::actor()> planner,
                                        std::function<caf::actor()> detector) {
  if (cfg.admin.empty()) return caf::actor{};
  auto at = parse_endpoint(cfg.admin, "admin", true);
  if (!at) return at.error();
  auto console = sys.spawn(console_actor, std::move(planner), std::move(detector));
  console_endpoint_options eo;
  if (!at->first.empty()) eo.bind_address = at->first;
  auto port = open_console_endpoint(sys, at->second, console, eo);
  if (!port) {
    caf::anon_send_exit(console, caf::exit_reason::user_shutdown);
    return port.error();
  }
  spdlog::info("admin console: http://{}:{}/", eo.bind_address, *port);
  return console;
}

planner_options planner_opts(const cleave_config& cfg, int min_devices, uint16_t bulk_port = 0,
                             const transport::admission_key& admission = {}) {
  planner_options o;
  o.bulk_port = bulk_port;
  o.admission = admission;
  o.cost.ps_flops = cfg.ps_flops;
  o.cost.ps_egress = cfg.ps_egress;
  o.ps_secret = cfg.ps_secret;
  o.cost.ps_ingress = cfg.ps_egress;
  o.cost.max_tiles_per_device = cfg.max_tiles_per_device;
  o.min_devices = min_devices;
  return o;
}

detector_options detector_opts(const cleave_config& cfg) {
  detector_options o;
  o.heartbeat_seconds = cfg.heartbeat;
  o.suspect_phi = cfg.suspect_phi;
  o.dead_phi = cfg.dead_phi;
  o.dead_min_silence_seconds = 3.5 * cfg.heartbeat;
  return o;
}

// The control-plane children every coordinator runs: detector, then planner.
std::vector<child_spec> control_plane(const cleave_config& cfg, int min_devices,
                                      uint16_t bulk_port = 0,
                                      const transport::admission_key& admission = {}) {
  auto dopts = detector_opts(cfg);
  auto popts = planner_opts(cfg, min_devices, bulk_port, admission);
  auto starts = std::make_shared<int>(0);
  return {
    {"detector", [dopts](caf::local_actor* sup) { return sup->spawn(detector_actor, dopts); }},
    {"planner",
     [popts, starts](caf::local_actor* sup) mutable {
       // A restarted planner must not wait for the first step's quorum:
       // devices that died meanwhile will never join it.
       if ((*starts)++ > 0) popts.min_devices = 0;
       return sup->spawn(planner_actor, popts, registered(sup->system(), "detector"));
     }},
  };
}

caf::expected<std::vector<device_profile>> in_process_fleet(const cleave_config& cfg) {
  if (!cfg.fleet.empty()) {
    auto fleet = read_fleet_file(cfg.fleet);
    if (!fleet) return fleet;
    if (cfg.devices != 0 && static_cast<int>(fleet->size()) != cfg.devices)
      return fail("--fleet " + cfg.fleet + " lists " + std::to_string(fleet->size())
                  + " devices but --devices=" + std::to_string(cfg.devices));
    return fleet;
  }
  if (!cfg.profile.empty()) {
    auto p = preset_profile(cfg.profile);
    if (!p) return p.error();
    return std::vector<device_profile>(static_cast<size_t>(cfg.devices), *p);
  }
  return default_fleet(cfg.devices);
}

caf::expected<churn_schedule> churn_for(const cleave_config& cfg, int devices) {
  if (!cfg.churn.empty()) return churn_schedule::from_file(cfg.churn, devices);
  if (cfg.churn_rate > 0) {
    auto joiner = preset_profile(cfg.profile.empty() ? "vm" : cfg.profile);
    if (!joiner) return joiner.error();
    return churn_schedule::random(cfg.churn_rate, static_cast<uint64_t>(cfg.seed), devices, *joiner);
  }
  return churn_schedule{};
}

// The supervisor starts its children when it initialises; one round trip
// ensures that has happened and the registry names them.
caf::actor start_supervisor(caf::actor_system& sys, std::vector<child_spec> children) {
  auto sup = sys.spawn(supervisor_actor, supervisor_options{}, std::move(children));
  caf::scoped_actor self{sys};
  self->request(sup, caf::infinite, caf::get_atom::value).receive([](uint64_t) {}, [](caf::error&) {});
  exit_process_when_it_fails(sys, sup);
  return sup;
}

void stop(const caf::actor& supervisor) {
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
}

}  // namespace

int run_all(cleave_config& cfg, const train_options& opts, int threads) {
  if (cfg.devices == 0 && cfg.fleet.empty()) {
    if (!cfg.admin.empty())
      return usage_error("--admin shows a fleet: use it with --devices, --fleet or --role=ps");
    return train(cfg, opts, threads, 0, {});
  }
  auto fleet = in_process_fleet(cfg);
  if (!fleet) return usage_error(describe(fleet.error()));
  const int n = static_cast<int>(fleet->size());
  // The fleet's tiles run on the scheduler's threads; one GEMM thread each.
  set_gemm_threads(1);
  caf::actor_system sys{cfg};
  auto children = control_plane(cfg, cfg.min_devices >= 0 ? cfg.min_devices : n);
  device_options base;
  base.heartbeat_seconds = cfg.heartbeat;
  auto& system = sys;
  base.find_planner = [&system] { return registered(system, "planner"); };
  for (int i = 0; i < n; ++i) {
    device_options dopt = base;
    dopt.profile = (*fleet)[static_cast<size_t>(i)];
    dopt.fleet_index = i;
    children.push_back({device_name(i),
                        [dopt](caf::local_actor* sup) {
                          return sup->spawn(device_actor, dopt, registered(sup->system(), "planner"));
                        },
                        false});
  }
  auto schedule = churn_for(cfg, n);
  if (!schedule) return usage_error(describe(schedule.error()));
  const bool churning = !schedule->empty();
  if (churning)
    children.push_back({"churn",
                        [s = std::move(*schedule), base](caf::local_actor* sup) {
                          return sup->spawn(churn_actor, s, base,
                                            registered(sup->system(), "planner"));
                        },
                        false});
  auto supervisor = start_supervisor(sys, std::move(children));
  auto console = start_console(sys, cfg, base.find_planner,
                               [&system] { return registered(system, "detector"); });
  if (!console) {
    stop(supervisor);
    return runtime_error(describe(console.error()));
  }
  spdlog::info("in-process fleet: {} emulated devices", n);
  const int rc = train_on_fleet(sys, cfg, opts, threads, registered(sys, "planner"), n, {},
                                churning ? registered(sys, "churn") : caf::actor{},
                                base.find_planner, *console);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  stop(supervisor);
  return rc;
}

// The ps's end of the bulk tensor channel: a listener and the gateway that
// admits devices by their tickets and routes frames to the shards' engines.
struct bulk_endpoint {
  caf::actor gateway;
  transport::bulk_listener listener;
  transport::admission_key admission;
  void close() const {
    caf::anon_send_exit(listener.channel, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
  }
};

caf::expected<bulk_endpoint> open_bulk_endpoint(caf::actor_system& sys, const std::string& bind_host,
                                                int port) {
  if (port < 0 || port > 65535) return fail("--bulk-port must be in [0, 65535]");
  bulk_endpoint out;
  auto key = transport::make_admission_key();
  if (!key) return key.error();
  out.admission = *key;
  out.gateway = sys.spawn(bulk_gateway, out.admission);
  transport::bulk_options bopts;
  bopts.bind_address = bind_host;
  auto lst = transport::spawn_bulk_listener(sys, static_cast<uint16_t>(port), out.gateway, bopts);
  if (!lst) {
    caf::anon_send_exit(out.gateway, caf::exit_reason::user_shutdown);
    return fail("cannot open the bulk channel: " + sys.render(lst.error()));
  }
  out.listener = *lst;
  return out;
}

namespace {

std::atomic<bool> stop_requested{false};

void on_stop_signal(int) { stop_requested = true; }

}  // namespace

// Connects to a published actor, retrying a refused connection until
// `patience` seconds have passed.
caf::expected<caf::actor> reach(caf::actor_system& sys, const std::pair<std::string, uint16_t>& at,
                                double patience) {
  const auto give_up = std::chrono::steady_clock::now()
                       + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(patience));
  for (;;) {
    auto actor = sys.middleman().remote_actor(at.first, at.second);
    if (actor || stop_requested || std::chrono::steady_clock::now() >= give_up) return actor;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

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
int run_ps_with_planner(cleave_config& cfg, const train_options& opts, int threads, int min_devices) {
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
  const int rc = train_on_fleet(sys, cfg, opts, threads, *planner, min_devices,
                                bulk ? bulk->gateway : caf::actor{}, {}, find_planner, *console);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  if (bulk) bulk->close();
  return rc;
}

int run_ps(cleave_config& cfg, const train_options& opts, int threads) {
  const int min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
  if (!cfg.planner.empty()) return run_ps_with_planner(cfg, opts, threads, min_devices);
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
  const int rc = train_on_fleet(sys, cfg, opts, threads, planner, min_devices, bulk->gateway, {},
                                {}, *console);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  shutdown();
  return rc;
}

int run_service(cleave_config& cfg) {
  auto endpoint = parse_endpoint(cfg.listen, "listen", true);
  if (!endpoint) return usage_error(describe(endpoint.error()));
  caf::actor_system sys{cfg};
  std::vector<child_spec> children;
  if (cfg.role == "detector") {
    children.push_back({"detector", [d = detector_opts(cfg)](caf::local_actor* sup) {
                          return sup->spawn(detector_actor, d);
                        }});
  } else {
    auto at = parse_endpoint(cfg.detector, "detector", false);
    if (!at) return usage_error("--role=planner needs --detector=host:port: " + describe(at.error()));
    auto detector = sys.middleman().remote_actor(at->first, at->second);
    if (!detector)
      return runtime_error("cannot reach the detector at " + cfg.detector + ": "
                           + sys.render(detector.error()));
    const int min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
    children.push_back({"planner", [p = planner_opts(cfg, min_devices), d = *detector](caf::local_actor* sup) {
                          return sup->spawn(planner_actor, p, d);
                        }});
  }
  auto supervisor = start_supervisor(sys, std::move(children));
  auto service = registered(sys, cfg.role.c_str());
  const char* host = endpoint->first.empty() ? nullptr : endpoint->first.c_str();
  auto port = sys.middleman().publish(service, endpoint->second, host, true);
  if (!port) {
    stop(supervisor);
    return runtime_error("cannot listen on " + cfg.listen + ": " + sys.render(port.error()));
  }
  spdlog::info("{}: listening on port {}", cfg.role, *port);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  spdlog::info("{}: stopping", cfg.role);
  stop(supervisor);
  return 0;
}

int run_device(cleave_config& cfg, int threads) {
  auto endpoint = parse_endpoint(cfg.connect, "connect", false);
  if (!endpoint) return usage_error(describe(endpoint.error()));
  auto profile = preset_profile(cfg.profile.empty() ? "vm" : cfg.profile);
  if (!profile) return usage_error(describe(profile.error()));
  set_gemm_threads(threads);
  caf::actor_system sys{cfg};
  device_options dopt;
  dopt.profile = *profile;
  dopt.paced = false;  // a real device is as fast as it is
  dopt.heartbeat_seconds = cfg.heartbeat;
  if (cfg.bulk) dopt.bulk_host = endpoint->first;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  // A ps that restarts (--resume) comes back at the same address: the
  // device joins it again, as a new member, without a manual step.
  for (int joins = 0; !stop_requested; ++joins) {
    auto planner = reach(sys, *endpoint, cfg.reconnect_seconds);
    if (!planner) {
      if (stop_requested) break;
      if (joins == 0)
        return runtime_error("cannot reach the ps at " + cfg.connect + ": " + sys.render(planner.error()));
      spdlog::info("device: the ps at {} did not come back within {} s; exiting", cfg.connect,
                   cfg.reconnect_seconds);
      return 0;
    }
    auto device = sys.spawn(device_actor, dopt, *planner);
    spdlog::info("device: {} {} as a '{}' device", joins == 0 ? "joined" : "rejoined", cfg.connect,
                 profile->name);
    caf::scoped_actor self{sys};
    self->monitor(device);
    bool gone = false;
    while (!gone && !stop_requested)
      self->receive([&](const caf::down_msg&) { gone = true; },
                    caf::after(std::chrono::milliseconds(200)) >> [] {});
    if (!gone) {
      self->send_exit(device, caf::exit_reason::user_shutdown);
      break;
    }
    // A refused join (say, a --bulk device before the ps registered its
    // channel) must not turn into a tight loop against the planner.
    spdlog::info("device: the ps has gone or refused it; reconnecting");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return 0;
}

}  // namespace cleave
