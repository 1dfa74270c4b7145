// --role=device: one device process. It joins the ps's device edge at
// --connect (framed, never BASP), takes tiles until the ps says the run is
// over, and exits 0. A ps that vanishes without that word is given
// --reconnect-seconds to come back (a ps restarted with --resume gets its
// fleet back this way); past that the device exits 1 with one line. --stay
// waits for the next run instead of exiting, however the last one ended.

#include <chrono>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/device/device_actor.hpp"
#include "actors/device/edge_link.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "kernels/gemm.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

// Runs the device actor until it leaves; true if the run ended (the ps said
// so), false if it lost the ps or was refused. A stop request ends it too.
bool serve(caf::actor_system& sys, const device_options& dopt, const caf::actor& link) {
  auto device = sys.spawn(device_actor, dopt, link);
  caf::scoped_actor self{sys};
  self->monitor(device);
  bool gone = false;
  bool run_over = false;
  while (!gone && !stop_requested())
    self->receive(
      [&](const caf::down_msg& down) {
        gone = true;
        run_over = down.reason == caf::exit_reason::normal;
      },
      caf::after(std::chrono::milliseconds(200)) >> [] {});
  if (!gone) self->send_exit(device, caf::exit_reason::user_shutdown);
  self->send_exit(link, caf::exit_reason::user_shutdown);
  return run_over;
}

}  // namespace

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
  edge_link_options lopt;
  lopt.host = endpoint->first;
  lopt.port = endpoint->second;
  stop_on_signals();
  const double forever = std::numeric_limits<double>::infinity();
  double patience = cfg.reconnect_seconds;  // for the first connection
  for (int joins = 0; !stop_requested(); ++joins) {
    auto link = reach(patience, [&] { return connect_edge(sys, lopt); });
    if (!link) {
      if (stop_requested()) break;
      if (joins == 0)
        return runtime_error("cannot reach the ps at " + cfg.connect + ": " + describe(link.error()));
      return runtime_error("the ps at " + cfg.connect + " went away without ending the run and did "
                           "not come back within " + std::to_string(static_cast<int>(patience)) + " s");
    }
    spdlog::info("device: {} {} as a '{}' device", joins == 0 ? "joined" : "rejoined",
                 cfg.connect, profile->name);
    const bool run_over = serve(sys, dopt, *link);
    if (stop_requested()) break;
    if (run_over && !cfg.stay) {
      spdlog::info("device: the run is over; exiting");
      return 0;
    }
    spdlog::info(run_over ? "device: the run is over; waiting for the next one (--stay)"
                          : "device: the ps has gone or refused it; reconnecting");
    patience = cfg.stay ? forever : cfg.reconnect_seconds;
    // The ps that ended its run closes its port in a moment, and a refused
    // join must not turn into a tight loop against the ps.
    std::this_thread::sleep_for(std::chrono::milliseconds(run_over ? 1000 : 500));
  }
  return 0;
}

}  // namespace cleave
