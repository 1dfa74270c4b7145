// --role=planner and --role=detector: that service alone, under its own
// supervisor, published on --listen until SIGINT or SIGTERM.

#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/detector/detector_actor.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"

namespace cleave {

int run_service(cleave_config& cfg) {
  auto endpoint = parse_endpoint(cfg.listen, "--listen", true);
  if (!endpoint) return usage_error(describe(endpoint.error()));
  caf::actor_system sys{cfg};
  std::vector<child_spec> children;
  if (cfg.role == "detector") {
    children.push_back({"detector", [d = detector_opts(cfg)](caf::local_actor* sup) {
                          return caf::actor_cast<caf::actor>(sup->spawn(detector_actor, d));
                        }});
  } else {
    auto at = parse_endpoint(cfg.detector, "--detector", false);
    if (!at) return usage_error("--role=planner needs --detector=host:port: " + describe(at.error()));
    auto detector = remote_service(sys, cfg, *at);
    if (!detector)
      return runtime_error("cannot reach the detector at " + cfg.detector + ": "
                           + sys.render(detector.error()));
    const int min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
    children.push_back({"planner", [p = planner_opts(cfg, min_devices), d = *detector](caf::local_actor* sup) {
                          return sup->spawn(planner_actor, p, caf::actor_cast<detector_handle>(d));
                        }});
  }
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
