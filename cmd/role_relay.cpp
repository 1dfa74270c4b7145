// --role=relay: a relay between the ps and devices (actors/relay). Devices
// join its --listen edge as they would the ps's; it holds one connection to
// the ps's edge at --connect for all of them, and keeps the operand blocks
// it passes down in a store of --relay-memory bytes. Runs until SIGINT or
// SIGTERM, or until the ps refuses it.

#include <unistd.h>

#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/gateway/edge_gateway.hpp"
#include "actors/relay/relay_actor.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "schema/fleet_relays.hpp"

namespace cleave {

int run_relay(cleave_config& cfg) {
  auto ps = parse_endpoint(cfg.connect, "--connect", false);
  if (!ps) return usage_error("--role=relay needs --connect=HOST:PORT, the ps's device edge: " + describe(ps.error()));
  auto at = parse_endpoint(cfg.listen, "--listen", true);
  if (!at) return usage_error("--role=relay needs --listen=[HOST:]PORT for its devices: " + describe(at.error()));
  if (!(cfg.relay_memory >= 1 << 20 && cfg.relay_memory <= 1e15))
    return usage_error("--relay-memory must be between 1 MiB and 1e15 bytes");
  if (cfg.relay_name.size() > max_relay_name)
    return usage_error("--relay-name is at most " + std::to_string(max_relay_name) + " bytes");
  relay_seat seat{"flags", static_cast<uint64_t>(cfg.relay_memory), cfg.relay_link, cfg.relay_link, cfg.relay_fanout,
                  cfg.relay_latency};
  if (auto err = validate(relay_profile_of(seat)))
    return usage_error("--relay-link, --relay-fanout and --relay-latency: " + describe(err));
  if (cfg.tls() && cfg.relay_name.empty())
    return usage_error("--role=relay with TLS needs --relay-name: the name in its certificate (--tls-cert), "
                       "which the ps checks its joins against");
  caf::actor_system sys{cfg};
  relay_options ro;
  ro.ps_host = ps->first;
  ro.ps_port = ps->second;
  ro.seat = seat;  // named below
  ro.report_seconds = cfg.progress_seconds;
  auto client_tls = edge_tls(cfg, transport::tls_side::client);
  if (!client_tls) return usage_error("TLS toward the ps: " + describe(client_tls.error()));
  ro.upstream.tls = *client_tls;
  // Its devices' edge: the ps's own rules and caps (edge_gateway.hpp).
  edge_options eo;
  eo.max_connections = static_cast<size_t>(cfg.max_devices);
  transport::bulk_options bo;
  bo.bind_address = at->first;
  if (cfg.relay_join_tokens && !cfg.tls())
    return usage_error("--relay-join-tokens needs TLS (--tls-cert, --tls-key, --tls-ca): without it every device is "
                       "admitted already");
  auto server_tls = edge_tls(cfg, transport::tls_side::server, !cfg.relay_join_tokens);
  if (!server_tls) return usage_error("TLS for the relay's devices: " + describe(server_tls.error()));
  bo.tls = *server_tls;
  ro.tls = bo.tls != nullptr;
  ro.handshake_timeout = eo.handshake_timeout;
  ro.idle_timeout = eo.idle_timeout;
  ro.rate = eo.rate;
  auto channel_opts = edge_channel_options(eo, bo);
  channel_opts.first_data_kinds = {edge_join};  // devices only: a relay is not behind a relay
  ro.max_tile_bytes = eo.max_tile_bytes;
  // Toward the ps: its devices' frames, routed, share one window.
  ro.upstream.max_payload = channel_opts.max_payload;
  ro.upstream.receive_window = 2 * transport::frame_cost(channel_opts.max_payload);
  // Its name for the ps: given, or this host and its port.
  std::string name = cfg.relay_name;
  auto relay = sys.spawn(relay_actor, ro);
  auto lst = transport::spawn_bulk_listener(sys, at->second, relay, channel_opts);
  if (!lst) {
    caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
    return runtime_error("cannot listen for devices on " + cfg.listen + ": " + sys.render(lst.error()));
  }
  if (name.empty()) {
    char host[64] = {};
    gethostname(host, sizeof(host) - 1);
    name = std::string(host).substr(0, max_relay_name - 6) + ":" + std::to_string(lst->port);
  }
  caf::anon_send(relay, relay_named_atom::value, name);
  caf::anon_send(relay, relay_listener_atom::value, lst->channel);
  if (!bo.tls) warn_if_exposed(at->first, "the relay's device edge");
  spdlog::info("relay '{}': listening on port {} for devices; the ps at {}; a store of {:.0f} MiB", name, lst->port,
               cfg.connect, cfg.relay_memory / (1 << 20));
  stop_on_signals();
  caf::scoped_actor self{sys};
  self->monitor(relay);
  bool down = false;
  caf::error why;
  while (!down && !stop_requested())
    self->receive([&](const caf::down_msg& msg) { down = true; why = msg.reason; },
                  caf::after(std::chrono::milliseconds(50)) >> [] {});
  if (!down) {
    self->send_exit(relay, caf::exit_reason::user_shutdown);
    self->wait_for(relay);
    return 0;
  }
  if (why && why != caf::exit_reason::user_shutdown) return runtime_error(describe(why));
  return 0;
}

}  // namespace cleave
