#pragma once
// What the roles' wiring shares: finding registered actors, the supervisor
// and the control plane it starts (detector, planner), the admin console,
// the ps's device edge, reaching a published actor, and stopping on SIGINT
// or SIGTERM.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/console/console_protocol.hpp"
#include "actors/detector/detector_options.hpp"
#include "actors/planner/planner_actor.hpp"
#include "actors/ps/engine/distributed_gemm.hpp"
#include "actors/supervisor/supervisor.hpp"
#include "actors/gateway/edge_gateway.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "actors/transport/tls_session.hpp"
#include "cmd/options.hpp"

namespace cleave {

// The actor the registry names `name` (the supervisor's children), or null.
caf::actor registered(caf::actor_system& sys, const char* name);

planner_options planner_opts(const cleave_config& cfg, int min_devices);

// A distributed engine's options from the flags (the tile schedule,
// verification, failure policy, shard count and paced link); the caller
// adds how it finds its planner and which shard it is.
engine_options engine_opts(const cleave_config& cfg);
// The planner's options for a fleet that is planned (--role=plan) or
// simulated (--role=simulate), not run: every PS shard on a host of its own
// (ps_links = --ps-shards), the detector's least silence as the cost of a
// death, and the PS's memory bandwidth for its row-wise ops. One helper so
// that a plan and a simulation of the same flags plan the same step.
planner_config planned_fleet_cost(const cleave_config& cfg);
// The relay tier of a planned or simulated fleet of `devices`: --relays
// with its --relay-* flags, or the --fleet file's "relays", not both.
caf::expected<fleet_relays> planned_relays(const cleave_config& cfg, size_t devices);
detector_options detector_opts(const cleave_config& cfg);

// The control-plane children every coordinator runs: detector, then planner.
std::vector<child_spec> control_plane(const cleave_config& cfg, int min_devices);

// Spawns a supervisor over `children` and returns once the registry names
// them; the process exits when the supervisor gives up, unless
// `exit_when_it_fails` is false (the caller watches it then).
caf::actor start_supervisor(caf::actor_system& sys, std::vector<child_spec> children, bool exit_when_it_fails = true);
void stop(const caf::actor& supervisor);

// The admin console (--admin=[host:]port): an actor holding the loop's
// status, asking the planner and detector for the live fleet, behind an
// HTTP endpoint. A null actor when --admin is not given.
caf::expected<console_handle> start_console(caf::actor_system& sys, const cleave_config& cfg,
                                        std::function<caf::actor()> planner,
                                        std::function<caf::actor()> detector);

// The ps's device edge (--listen): the framed listener devices join on and
// the gateway behind it. No device ever reaches a BASP port.
struct edge_endpoint {
  caf::actor gateway;
  transport::bulk_listener listener;
  void close() const {
    caf::anon_send_exit(listener.channel, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
  }
};

// `at` replaces --listen, and `adjust` sees the edge's options before the
// gateway starts (a coordinator over shard processes adds their edges).
caf::expected<edge_endpoint> open_edge(caf::actor_system& sys, const cleave_config& cfg,
                                       std::function<caf::actor()> planner,
                                       const std::function<void(edge_options&)>& adjust = {},
                                       const std::string& at = {});

// Says so when a server listens beyond this host without TLS.
void warn_if_exposed(const std::string& bind_host, const char* what);

// SIGINT and SIGTERM set stop_requested() from now on.
void stop_on_signals();
bool stop_requested();

// Calls `attempt` (a connection) until it succeeds, `patience` seconds have
// passed (infinite: until it does) or a stop is requested.
caf::expected<caf::actor> reach(double patience, const std::function<caf::expected<caf::actor>()>& attempt);

// Server side only (BASP, under CAF's mutual TLS with --tls-*): publishes
// `service` at `at`, or reaches the actor published there.
caf::expected<uint16_t> publish_service(caf::actor_system& sys, const cleave_config& cfg,
                                        const caf::actor& service,
                                        const std::pair<std::string, uint16_t>& at);
// Closes `port`, where publish_service put `service` (the port is free for another).
void unpublish_service(caf::actor_system& sys, const cleave_config& cfg, const caf::actor& service, uint16_t port);
caf::expected<caf::actor> remote_service(caf::actor_system& sys, const cleave_config& cfg,
                                         const std::pair<std::string, uint16_t>& at);
// The same, giving up after `timeout` (a node that takes the connection and
// never answers would hold remote_service forever).
caf::expected<caf::actor> remote_service_within(caf::actor_system& sys, const cleave_config& cfg,
                                                const std::pair<std::string, uint16_t>& at, caf::timespan timeout);
// The same, retried with that patience.
caf::expected<caf::actor> reach(caf::actor_system& sys, const cleave_config& cfg,
                                const std::pair<std::string, uint16_t>& at, double patience);

// The device edge's TLS context for this node's side (null without --tls-*).
caf::expected<std::shared_ptr<const transport::tls_context>> edge_tls(const cleave_config& cfg,
                                                                      transport::tls_side side,
                                                                      bool require_peer_cert = true);
// A PS shard's link to its coordinator under TLS (null without --tls-*): a
// server that takes only peers whose certificate could serve (the job's
// own processes), never a device's.
caf::expected<std::shared_ptr<const transport::tls_context>> shard_link_tls(const cleave_config& cfg);

}  // namespace cleave
