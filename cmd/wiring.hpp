#pragma once
// What the roles' wiring shares: finding registered actors, the supervisor
// and the control plane it starts (detector, planner), the admin console,
// the ps's end of the bulk channel, reaching a published actor, and stopping
// on SIGINT or SIGTERM.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/detector/detector_actor.hpp"
#include "actors/planner/planner_actor.hpp"
#include "actors/supervisor/supervisor.hpp"
#include "actors/transport/admission.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "cmd/options.hpp"

namespace cleave {

// The actor the registry names `name` (the supervisor's children), or null.
caf::actor registered(caf::actor_system& sys, const char* name);

planner_options planner_opts(const cleave_config& cfg, int min_devices, uint16_t bulk_port = 0,
                             const transport::admission_key& admission = {});
detector_options detector_opts(const cleave_config& cfg);

// The control-plane children every coordinator runs: detector, then planner.
std::vector<child_spec> control_plane(const cleave_config& cfg, int min_devices,
                                      uint16_t bulk_port = 0,
                                      const transport::admission_key& admission = {});

// Spawns a supervisor over `children` and returns once the registry names
// them; the process exits when the supervisor gives up.
caf::actor start_supervisor(caf::actor_system& sys, std::vector<child_spec> children);
void stop(const caf::actor& supervisor);

// The admin console (--admin=[host:]port): an actor holding the loop's
// status, asking the planner and detector for the live fleet, behind an
// HTTP endpoint. A null actor when --admin is not given.
caf::expected<caf::actor> start_console(caf::actor_system& sys, const cleave_config& cfg,
                                        std::function<caf::actor()> planner,
                                        std::function<caf::actor()> detector);

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
                                                int port);

// SIGINT and SIGTERM set stop_requested() from now on.
void stop_on_signals();
bool stop_requested();

// Connects to a published actor, retrying a refused connection until
// `patience` seconds have passed (infinite: until it answers) or a stop is
// requested.
caf::expected<caf::actor> reach(caf::actor_system& sys, const std::pair<std::string, uint16_t>& at,
                                double patience);

}  // namespace cleave
