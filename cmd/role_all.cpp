// --role=all: every role in this process. Without devices, the single-process
// reference; with N, a supervisor over the control plane, N emulated devices
// and scripted churn, and the training loop over that fleet.

#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>

#include "actors/churn/churn_actor.hpp"
#include "actors/churn/demo_scenario.hpp"
#include "actors/device/byzantine_file.hpp"
#include "actors/device/device_actor.hpp"
#include "cmd/roles.hpp"
#include "cmd/training_run.hpp"
#include "cmd/wiring.hpp"
#include "kernels/gemm.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

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

}  // namespace

int run_all(cleave_config& cfg, const train_options& opts, int threads) {
  if (cfg.devices == 0 && cfg.fleet.empty()) {
    if (!cfg.admin.empty())
      return usage_error("--admin shows a fleet: use it with --devices, --fleet or --role=ps");
    return train_locally(cfg, opts, threads);
  }
  if (!cfg.xc_baseline.empty()) {  // the devices are only links: no actors
    auto fleet = in_process_fleet(cfg);
    if (!fleet) return usage_error(describe(fleet.error()));
    return train_xc_data_parallel(cfg, opts, threads, *fleet);
  }
  std::optional<demo_setup> demo;
  if (cfg.demo) {
    auto made = make_demo(opts.steps, cfg.scenario == "demo");
    if (!made) return runtime_error(describe(made.error()));
    demo = std::move(*made);
  }
  auto fleet = demo ? caf::expected<std::vector<device_profile>>{demo->fleet} : in_process_fleet(cfg);
  if (!fleet) return usage_error(describe(fleet.error()));
  const int n = static_cast<int>(fleet->size());
  byzantine_fleet liars;
  if (demo) liars = demo->liars;
  if (!cfg.byzantine.empty()) {
    auto read = byzantine_from_file(cfg.byzantine, n);
    if (!read) return usage_error(describe(read.error()));
    liars = std::move(*read);
  }
  // The fleet's tiles run on the scheduler's threads; one GEMM thread each.
  set_gemm_threads(1);
  caf::actor_system sys{cfg};
  auto children = control_plane(cfg, cfg.min_devices >= 0 ? cfg.min_devices : n);
  device_options base;
  base.heartbeat_seconds = cfg.heartbeat;
  base.paced = !cfg.unpaced_devices;
  auto& system = sys;
  base.find_planner = [&system] { return registered(system, "planner"); };
  for (int i = 0; i < n; ++i) {
    device_options dopt = base;
    dopt.profile = (*fleet)[static_cast<size_t>(i)];
    dopt.fleet_index = i;
    if (auto it = liars.find(i); it != liars.end()) {
      dopt.lies = it->second;
      dopt.lie_seed = static_cast<uint64_t>(cfg.seed);
    }
    children.push_back({device_name(i),
                        [dopt](caf::local_actor* sup) {
                          return sup->spawn(device_actor, dopt, registered(sup->system(), "planner"));
                        },
                        false});
  }
  auto schedule = demo && cfg.scenario == "demo" ? caf::expected<churn_schedule>{demo->churn}
                                                 : churn_for(cfg, n);
  if (!schedule) return usage_error(describe(schedule.error()));
  const bool churning = !schedule->empty();
  if (churning)
    children.push_back({"churn",
                        [s = std::move(*schedule), base](caf::local_actor* sup) {
                          auto planner = registered(sup->system(), "planner");
                          auto spawn_device = [base, planner](caf::local_actor* parent,
                                                              const device_profile& profile,
                                                              int32_t fleet_index) {
                            auto opts = base;
                            opts.profile = profile;
                            opts.fleet_index = fleet_index;
                            return parent->spawn<caf::linked>(device_actor, opts, planner);
                          };
                          return caf::actor_cast<caf::actor>(
                            sup->spawn(churn_actor, s, spawn_device, planner));
                        },
                        false});
  auto supervisor = start_supervisor(sys, std::move(children));
  auto find_detector = [&system] { return registered(system, "detector"); };
  auto console = start_console(sys, cfg, base.find_planner, find_detector);
  if (!console && demo && cfg.admin == demo_console) {
    spdlog::warn("{} is taken; the demo's console takes any free port", demo_console);
    cfg.admin = "127.0.0.1:0";
    console = start_console(sys, cfg, base.find_planner, find_detector);
  }
  if (!console) {
    stop(supervisor);
    return runtime_error(describe(console.error()));
  }
  spdlog::info("in-process fleet: {} emulated devices", n);
  if (demo) {
    spdlog::info("the demo: gpt small on {} emulated devices for {} steps; watch it in the console above", n,
                 opts.steps);
    std::istringstream story(demo->story);
    for (std::string line; std::getline(story, line);) spdlog::info("  scenario: {}", line);
    if (cfg.scenario != "demo") spdlog::info("  scenario: none (--scenario=none, or churn or lies from flags)");
  }
  if (!cfg.byzantine.empty()) spdlog::info("--byzantine: {}", describe_byzantine(liars, n));
  fleet_run run;
  run.planner = registered(sys, "planner");
  run.devices = n;
  if (churning) run.churn = caf::actor_cast<churn_handle>(registered(sys, "churn"));
  run.find_planner = base.find_planner;
  run.console = *console;
  run.emulated = true;
  const int rc = train_on_fleet(sys, cfg, opts, threads, run);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  stop(supervisor);
  return rc;
}

}  // namespace cleave
