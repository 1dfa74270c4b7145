// --role=planner and --role=detector: that service alone, under its own
// supervisor, published on --listen until SIGINT or SIGTERM.
//
// A planner process's planner is bound to one BASP link to its detector
// process. Under TLS that link has been seen to close when a ps that used
// them leaves (CAF 0.17's OpenSSL module), and the planner fails with it, as
// often as its supervisor restarts it. So the process keeps its planner
// going itself: when the supervisor gives up, the planner is unpublished,
// the detector reached again (waiting longer after each failure: backoff),
// and a new planner published at the same port, where a ps finds it as it
// finds a restarted planner process (its device proxies join the devices to
// it again).

#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/detector/detector_actor.hpp"
#include "actors/supervisor/backoff.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

// Sleeps up to `seconds`, less if the process is asked to stop.
void pause_unless_stopped(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(seconds));
  while (!stop_requested() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// Waits for `supervisor` to stop (its reason) or the process to be asked to stop (none).
caf::error until_down(caf::actor_system& sys, const caf::actor& supervisor) {
  caf::scoped_actor self{sys};
  self->monitor(supervisor);
  caf::error why;
  bool down = false;
  while (!down && !stop_requested())
    self->receive(
      [&](const caf::down_msg& msg) {
        down = true;
        why = msg.reason ? msg.reason : caf::make_error(caf::sec::runtime_error, "the planner stopped");
      },
      caf::after(std::chrono::milliseconds(50)) >> [] {});
  return why;
}

int run_planner(caf::actor_system& sys, cleave_config& cfg, const std::pair<std::string, uint16_t>& endpoint) {
  auto at = parse_endpoint(cfg.detector, "--detector", false);
  if (!at) return usage_error("--role=planner needs --detector=host:port: " + describe(at.error()));
  const int min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
  backoff wait(0.25, 2, 5);
  std::pair<std::string, uint16_t> listen = endpoint;  // its port once bound: every planner is published there
  stop_on_signals();
  for (bool first = true; !stop_requested(); first = false) {
    auto detector = remote_service_within(sys, cfg, *at, std::chrono::seconds(5));
    if (!detector) {
      if (first) return runtime_error("cannot reach the detector at " + cfg.detector + ": " + sys.render(detector.error()));
      const double pause = wait.next();
      spdlog::warn("planner: cannot reach the detector at {} ({}); trying again in {:g} s", cfg.detector,
                   sys.render(detector.error()), pause);
      pause_unless_stopped(pause);
      continue;
    }
    std::vector<child_spec> children;
    children.push_back({"planner", [p = planner_opts(cfg, first ? min_devices : 0), d = *detector](caf::local_actor* sup) {
                          return sup->spawn(planner_actor, p, caf::actor_cast<detector_handle>(d));
                        }});
    auto supervisor = start_supervisor(sys, std::move(children), false);
    auto planner = registered(sys, "planner");
    auto port = publish_service(sys, cfg, planner, listen);
    if (!port) {
      stop(supervisor);
      if (first) return runtime_error("cannot listen on " + cfg.listen + ": " + sys.render(port.error()));
      const double pause = wait.next();
      spdlog::warn("planner: cannot listen on port {} again ({}); trying again in {:g} s", listen.second,
                   sys.render(port.error()), pause);
      pause_unless_stopped(pause);
      continue;
    }
    listen.second = *port;
    if (first)
      spdlog::info("planner: listening on port {} (BASP{}: for the ps and other server-side nodes, never devices)",
                   *port, cfg.tls() ? " under mutual TLS" : "");
    else
      spdlog::warn("planner: a new planner listens on port {}, on a new link to the detector at {}", *port,
                   cfg.detector);
    const auto started = std::chrono::steady_clock::now();
    auto why = until_down(sys, supervisor);
    if (!why) {  // asked to stop
      stop(supervisor);
      break;
    }
    unpublish_service(sys, cfg, planner, *port);
    // One that ran a while failed for a new reason: started again at once.
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(30)) wait.reset();
    const double pause = wait.next();
    spdlog::warn("planner: the planner failed for good ({}); starting a new one in {:g} s", sys.render(why), pause);
    pause_unless_stopped(pause);
  }
  spdlog::info("planner: stopping");
  return 0;
}

}  // namespace

int run_service(cleave_config& cfg) {
  auto endpoint = parse_endpoint(cfg.listen, "--listen", true);
  if (!endpoint) return usage_error(describe(endpoint.error()));
  caf::actor_system sys{cfg};
  if (cfg.role == "planner") return run_planner(sys, cfg, *endpoint);
  std::vector<child_spec> children;
  children.push_back({"detector", [d = detector_opts(cfg)](caf::local_actor* sup) {
                        return caf::actor_cast<caf::actor>(sup->spawn(detector_actor, d));
                      }});
  auto supervisor = start_supervisor(sys, std::move(children));
  auto service = registered(sys, cfg.role.c_str());
  auto port = publish_service(sys, cfg, service, *endpoint);
  if (!port) {
    stop(supervisor);
    return runtime_error("cannot listen on " + cfg.listen + ": " + sys.render(port.error()));
  }
  spdlog::info("{}: listening on port {} (BASP{}: for the ps and other server-side nodes, never devices)",
               cfg.role, *port, cfg.tls() ? " under mutual TLS" : "");
  stop_on_signals();
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  spdlog::info("{}: stopping", cfg.role);
  stop(supervisor);
  return 0;
}

}  // namespace cleave
