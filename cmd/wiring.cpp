#include "cmd/wiring.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <iostream>
#include <thread>

#include <set>

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/console/console_actor.hpp"
#include "actors/console/controls.hpp"
#include "actors/console/http_endpoint.hpp"
#include "actors/detector/detector_actor.hpp"
#include "actors/detector/heartbeat_interval.hpp"
#include "cmd/roles.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

std::atomic<bool> stop_flag{false};

void on_stop_signal(int) { stop_flag = true; }

}  // namespace

int usage_error(const std::string& reason) {
  std::cerr << "cleave: " << reason << " (see --help)\n";
  return 2;
}

int runtime_error(const std::string& reason) {
  std::cerr << "cleave: " << reason << "\n";
  return 1;
}

caf::actor registered(caf::actor_system& sys, const char* name) {
  return caf::actor_cast<caf::actor>(sys.registry().get(caf::atom_from_string(name)));
}

engine_options engine_opts(const cleave_config& cfg) {
  engine_options eo;
  eo.schedule.tile_timeout_seconds = cfg.tile_timeout;
  eo.schedule.speculate_factor = cfg.speculate;
  eo.replicate = cfg.replicate;
  eo.trust_results = cfg.trust_results;
  if (auto w = parse_wire_precision(cfg.wire)) eo.wire = *w;  // unset: fp32; main refused anything else
  eo.trust.quarantine_after = cfg.quarantine_after;
  eo.stop_on_failure = cfg.failure_policy == "restart";
  eo.shards = static_cast<uint32_t>(cfg.ps_shards);
  eo.pipelined_devices = cfg.pipelined_devices;
  if (cfg.pace_ps_link) {
    eo.paced_egress = cfg.ps_egress;
    eo.paced_ingress = cfg.ps_ingress > 0 ? cfg.ps_ingress : cfg.ps_egress;
  }
  return eo;
}

planner_options planner_opts(const cleave_config& cfg, int min_devices) {
  planner_options o;
  o.cost.ps_flops = cfg.ps_flops;
  o.cost.ps_tile_seconds = cfg.ps_tile_seconds;
  o.cost.ps_egress = cfg.ps_egress;
  o.cost.ps_ingress = cfg.ps_ingress > 0 ? cfg.ps_ingress : cfg.ps_egress;
  // Paced shards each have a link of their own; unpaced ones share the process's.
  if (cfg.pace_ps_link) {
    o.cost.ps_links = cfg.ps_shards;
    o.cost.paced_ps_link = true;
  }
  o.cost.max_tiles_per_device = cfg.max_tiles_per_device;
  // A ps whose devices are processes may plan for their overlap of transfers
  // and compute, as --role=plan and simulate do when told: a live run and
  // its simulation then run the same plans.
  o.cost.pipelined_devices = cfg.pipelined_devices;
  o.min_devices = min_devices;
  return o;
}

planner_config planned_fleet_cost(const cleave_config& cfg) {
  planner_config pc = planner_opts(cfg, 0).cost;
  pc.ps_links = cfg.ps_shards;
  pc.ps_memory_bandwidth = cfg.ps_memory_bandwidth;
  pc.detection_seconds = detector_opts(cfg).dead_min_silence_seconds;
  pc.pipelined_devices = cfg.pipelined_devices;
  return pc;
}

caf::expected<fleet_relays> planned_relays(const cleave_config& cfg, size_t devices) {
  fleet_relays from_file;
  if (!cfg.fleet.empty()) {
    auto read = read_fleet_relays(cfg.fleet, devices);
    if (!read) return read.error();
    from_file = std::move(*read);
  }
  if (cfg.relays < 0) return fail("--relays must be >= 0, got " + std::to_string(cfg.relays));
  if (cfg.relays == 0) return from_file;
  if (!from_file.empty()) return fail("use --relays or the fleet file's \"relays\", not both");
  if (!(cfg.relay_memory >= 0 && cfg.relay_memory < 1e15)) return fail("--relay-memory out of range");
  relay_profile like;
  like.name = "relay";
  like.downlink = like.uplink = cfg.relay_link;
  like.fanout = cfg.relay_fanout;
  like.latency = cfg.relay_latency;
  like.memory_bytes = static_cast<uint64_t>(cfg.relay_memory);
  return even_relays(static_cast<size_t>(cfg.relays), like, devices);
}

detector_options detector_opts(const cleave_config& cfg) {
  // cfg.heartbeat is already the fleet's interval (main: --max-devices).
  detector_options o = detector_for_interval({}, cfg.heartbeat);
  o.suspect_phi = cfg.suspect_phi;
  o.dead_phi = cfg.dead_phi;
  o.dead_min_silence_seconds = 3.5 * cfg.heartbeat;
  return o;
}

std::vector<child_spec> control_plane(const cleave_config& cfg, int min_devices) {
  auto dopts = detector_opts(cfg);
  auto popts = planner_opts(cfg, min_devices);
  auto starts = std::make_shared<int>(0);
  return {
    {"detector",
     [dopts](caf::local_actor* sup) {
       return caf::actor_cast<caf::actor>(sup->spawn(detector_actor, dopts));
     }},
    {"planner",
     [popts, starts](caf::local_actor* sup) mutable {
       // A restarted planner must not wait for the first step's quorum:
       // devices that died meanwhile will never join it.
       if ((*starts)++ > 0) popts.min_devices = 0;
       return sup->spawn(planner_actor, popts,
                         caf::actor_cast<detector_handle>(registered(sup->system(), "detector")));
     }},
  };
}

caf::actor start_supervisor(caf::actor_system& sys, std::vector<child_spec> children, bool exit_when_it_fails) {
  auto sup = sys.spawn(supervisor_actor, supervisor_options{}, std::move(children));
  caf::scoped_actor self{sys};
  self->request(sup, caf::infinite, caf::get_atom::value).receive([](uint64_t) {}, [](caf::error&) {});
  if (exit_when_it_fails) exit_process_when_it_fails(sys, sup);
  return sup;
}

void stop(const caf::actor& supervisor) {
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
}


caf::expected<console_handle> start_console(caf::actor_system& sys, const cleave_config& cfg,
                                        std::function<caf::actor()> planner,
                                        std::function<caf::actor()> detector) {
  if (cfg.admin.empty()) {
    if (!cfg.admin_token.empty()) return fail("--admin-token needs --admin (the console it guards)");
    return console_handle{};
  }
  auto at = parse_endpoint(cfg.admin, "--admin", true);
  if (!at) return at.error();
  console_endpoint_options eo;
  if (!cfg.admin_token.empty()) {
    auto token = read_admin_token(cfg.admin_token);
    if (!token) return token.error();
    eo.admin_token = std::move(*token);
  }
  auto console = sys.spawn(console_actor, std::move(planner), std::move(detector),
                           !eo.admin_token.empty());
  if (!at->first.empty()) eo.bind_address = at->first;
  auto port = open_console_endpoint(sys, at->second, console, eo);
  if (!port) {
    caf::anon_send_exit(console, caf::exit_reason::user_shutdown);
    return port.error();
  }
  spdlog::info("admin console: http://{}:{}/ (controls {})", eo.bind_address, *port,
               eo.admin_token.empty() ? "off: no --admin-token" : "on");
  return console;
}

caf::expected<edge_endpoint> open_edge(caf::actor_system& sys, const cleave_config& cfg,
                                       std::function<caf::actor()> planner,
                                       const std::function<void(edge_options&)>& adjust,
                                       const std::string& address) {
  const std::string& listen = address.empty() ? cfg.listen : address;
  auto at = parse_endpoint(listen, address.empty() ? "--listen" : "--edge", true);
  if (!at) return at.error();
  edge_options eo;
  eo.planner = std::move(planner);
  eo.heartbeat_seconds = cfg.heartbeat;
  eo.max_connections = static_cast<size_t>(cfg.max_devices);
  if (!cfg.join_tokens.empty()) {
    auto tokens = join_tokens::load(cfg.join_tokens);
    if (!tokens) return tokens.error();
    auto issuer = transport::certificate_issuer::load(cfg.tls_ca, cfg.tls_ca_key);
    if (!issuer) return issuer.error();
    eo.tokens = std::move(*tokens);
    eo.issuer = *issuer;
  }
  if (adjust) adjust(eo);
  edge_endpoint out;
  out.gateway = sys.spawn(edge_gateway, eo);
  transport::bulk_options bo;
  bo.bind_address = at->first;
  // With join tokens, a device may come without a certificate to trade one.
  auto tls = edge_tls(cfg, transport::tls_side::server, cfg.join_tokens.empty());
  if (!tls) return fail("TLS for the device edge: " + describe(tls.error()));
  bo.tls = *tls;
  auto lst = transport::spawn_bulk_listener(sys, at->second, out.gateway, edge_channel_options(eo, bo));
  if (!lst) {
    caf::anon_send_exit(out.gateway, caf::exit_reason::user_shutdown);
    return fail("cannot listen for devices on " + listen + ": " + sys.render(lst.error()));
  }
  out.listener = *lst;
  if (!bo.tls) warn_if_exposed(at->first, "the device edge");
  return out;
}

void warn_if_exposed(const std::string& bind_host, const char* what) {
  const bool loopback = bind_host == "localhost" || bind_host.rfind("127.", 0) == 0 || bind_host == "::1";
  if (!loopback)
    spdlog::warn("{} listens on {} without TLS: anyone who reaches it can read and forge its "
                 "traffic; give TLS certificates or bind it to 127.0.0.1", what,
                 bind_host.empty() || bind_host == "0.0.0.0" || bind_host == "::" ? "every interface" : bind_host);
}

void stop_on_signals() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

bool stop_requested() { return stop_flag; }

caf::expected<uint16_t> publish_service(caf::actor_system& sys, const cleave_config& cfg,
                                        const caf::actor& service,
                                        const std::pair<std::string, uint16_t>& at) {
  const char* host = at.first.empty() ? nullptr : at.first.c_str();
  if (cfg.tls()) return caf::openssl::publish(service, at.second, host, true);
  warn_if_exposed(at.first, "this BASP port");
  return sys.middleman().publish(service, at.second, host, true);
}

void unpublish_service(caf::actor_system& sys, const cleave_config& cfg, const caf::actor& service, uint16_t port) {
  // Through the middleman actor itself: CAF 0.17's openssl::unpublish does not name the actor.
  const auto& mm = cfg.tls() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  caf::anon_send(mm, caf::unpublish_atom::value, service.address(), port);
}

caf::expected<caf::actor> remote_service_within(caf::actor_system& sys, const cleave_config& cfg,
                                                const std::pair<std::string, uint16_t>& at, caf::timespan timeout) {
  // remote_actor's own request to the middleman waits forever; this one does not.
  const auto& mm = cfg.tls() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  caf::scoped_actor self{sys};
  caf::expected<caf::actor> out = caf::make_error(caf::sec::request_timeout);
  self->request(mm, timeout, caf::connect_atom::value, at.first, at.second)
    .receive(
      [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
        if (ptr)
          out = caf::actor_cast<caf::actor>(std::move(ptr));
        else
          out = caf::make_error(caf::sec::no_actor_published_at_port, "no actor published at port "
                                                                          + std::to_string(at.second));
      },
      [&](caf::error& err) { out = std::move(err); });
  return out;
}

caf::expected<caf::actor> remote_service(caf::actor_system& sys, const cleave_config& cfg,
                                         const std::pair<std::string, uint16_t>& at) {
  if (cfg.tls()) return caf::openssl::remote_actor(sys, at.first, at.second);
  return sys.middleman().remote_actor(at.first, at.second);
}

caf::expected<caf::actor> reach(caf::actor_system& sys, const cleave_config& cfg,
                                const std::pair<std::string, uint16_t>& at, double patience) {
  return reach(patience, [&] { return remote_service(sys, cfg, at); });
}

caf::expected<std::shared_ptr<const transport::tls_context>> edge_tls(const cleave_config& cfg,
                                                                      transport::tls_side side,
                                                                      bool require_peer_cert) {
  if (!cfg.tls()) return std::shared_ptr<const transport::tls_context>{};
  transport::tls_files files{cfg.tls_cert, cfg.tls_key, cfg.tls_ca,
                             side == transport::tls_side::server ? cfg.tls_crl : std::string{}};
  return transport::make_tls_context(files, side, require_peer_cert);
}

caf::expected<std::shared_ptr<const transport::tls_context>> shard_link_tls(const cleave_config& cfg) {
  if (!cfg.tls()) return std::shared_ptr<const transport::tls_context>{};
  return transport::make_tls_context({cfg.tls_cert, cfg.tls_key, cfg.tls_ca, cfg.tls_crl},
                                     transport::tls_side::server, true, true);
}

caf::expected<caf::actor> reach(double patience, const std::function<caf::expected<caf::actor>()>& attempt) {
  const bool bounded = std::isfinite(patience);
  const auto give_up = std::chrono::steady_clock::now()
                       + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(bounded ? patience : 0));
  for (;;) {
    auto actor = attempt();
    if (actor || stop_flag || (bounded && std::chrono::steady_clock::now() >= give_up)) return actor;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}


}  // namespace cleave
