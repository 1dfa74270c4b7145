#include "cmd/shard_fleet.hpp"

#include <spdlog/spdlog.h>

#include "actors/ps/runtime_report.hpp"
#include "actors/ps/shards/remote_shard.hpp"
#include "cmd/roles.hpp"
#include "cmd/training_run.hpp"
#include "schema/errors.hpp"
#include "schema/job_proof.hpp"

namespace cleave {

shard_fleet::shard_fleet(caf::actor_system& sys, cleave_config& cfg, std::string edge)
    : sys_(sys), cfg_(cfg), edge_at_(std::move(edge)) {}

shard_fleet::~shard_fleet() {
  engine_.reset();
  if (edge_) edge_->close();
  if (supervisor_) stop(supervisor_);
}

caf::expected<std::vector<char>> shard_fleet::configure(const char* data, size_t size) {
  auto m = decode_shard_fleet(data, size);
  if (!m) return m.error();
  if (job_) {
    // A coordinator that rolled back re-sends its request: the same job is no change.
    if (job_->secret == m->secret && job_->shard == m->shard && job_->shards == m->shards)
      return encode_shard_edge(answer_);
    return fail("this shard already serves another job's devices");
  }
  // The job's figures, so that this shard's planner plans as the in-process
  // shard s of S would; a link this shard paces itself is its own.
  cfg_.ps_flops = m->ps_flops;
  cfg_.ps_tile_seconds = m->ps_tile_seconds;
  if (!cfg_.pace_ps_link) {
    cfg_.ps_egress = m->ps_egress;
    cfg_.ps_ingress = m->ps_ingress;
  }
  cfg_.heartbeat = m->heartbeat;
  cfg_.suspect_phi = m->suspect_phi;
  cfg_.dead_phi = m->dead_phi;
  cfg_.max_tiles_per_device = m->max_tiles_per_device;
  cfg_.ps_shards = static_cast<int>(m->shards);
  cfg_.tile_timeout = m->tile_timeout;
  cfg_.speculate = m->speculate;
  cfg_.replicate = m->replicate;
  cfg_.trust_results = m->trust_results;
  cfg_.quarantine_after = m->quarantine_after;
  supervisor_ = start_supervisor(sys_, control_plane(cfg_, m->min_devices));
  {
    std::lock_guard<std::mutex> guard{*secret_mu_};
    *secret_ = m->secret;
  }
  auto& sys = sys_;
  auto planner = [&sys] { return registered(sys, "planner"); };
  auto admit = [mu = secret_mu_, secret = secret_](edge_options& eo) {
    eo.admit_join = [mu, secret](const edge_join_msg& join) -> caf::error {
      std::lock_guard<std::mutex> guard{*mu};
      auto id = check_job_token(*secret, join.token);
      return id ? caf::error{} : id.error();
    };
  };
  auto edge = open_edge(sys_, cfg_, planner, admit, edge_at_);
  if (!edge) {
    // Nothing half-started stays behind: the coordinator may ask again.
    stop(supervisor_);
    supervisor_ = nullptr;
    return edge.error();
  }
  edge_ = *edge;
  const auto at = parse_endpoint(edge_at_, "--edge", true);
  answer_ = (at ? at->first : std::string{}) + ":" + std::to_string(edge_->listener.port);
  auto eo = engine_opts(cfg_);
  eo.find_planner = planner;
  eo.shard = m->shard;
  engine_ = std::make_unique<distributed_gemm>(sys_, planner(), eo);
  job_ = std::move(*m);
  spdlog::info("ps-shard: shard {} of {}; devices join its edge on port {}{}", job_->shard, job_->shards,
               edge_->listener.port, cfg_.pace_ps_link ? " (its link paced)" : "");
  return encode_shard_edge(answer_);
}

caf::error shard_fleet::begin_step() {
  if (!engine_) return caf::none;
  return engine_->begin_step(step_++);
}

void shard_fleet::add_stats(shard_stats& s) {
  if (!engine_) return;
  const auto acc = engine_->accounts();
  const auto t = traffic_of(acc);
  s.devices = true;
  s.tiles = t.tiles;
  s.bytes_down = t.bytes_down;
  s.bytes_up = t.bytes_up;
  s.local_gemms = acc.local_gemms;
  s.issue_seconds = acc.totals.issue_seconds;
  s.wait_seconds = acc.totals.wait_seconds;
  s.egress_seconds = acc.egress_seconds;
  s.ingress_seconds = acc.ingress_seconds;
}

caf::expected<std::string> configure_shard(const cleave_config& cfg, remote_shard& shard, size_t s, size_t count,
                                           const std::string& secret) {
  shard_fleet_msg m;
  m.shard = static_cast<uint32_t>(s);
  m.shards = static_cast<uint32_t>(count);
  m.min_devices = cfg.min_devices >= 0 ? cfg.min_devices : 1;
  m.ps_flops = cfg.ps_flops;
  m.ps_tile_seconds = cfg.ps_tile_seconds;
  m.ps_egress = cfg.ps_egress;
  m.ps_ingress = cfg.ps_ingress;
  m.heartbeat = cfg.heartbeat;
  m.suspect_phi = cfg.suspect_phi;
  m.dead_phi = cfg.dead_phi;
  m.tile_timeout = cfg.tile_timeout;
  m.speculate = cfg.speculate;
  m.replicate = cfg.replicate;
  m.max_tiles_per_device = cfg.max_tiles_per_device;
  m.quarantine_after = cfg.quarantine_after;
  m.trust_results = cfg.trust_results;
  m.secret = secret;
  const auto who = "PS shard " + std::to_string(s) + " at " + shard.address();
  auto frame = shard.request(shard_kind::fleet, encode(m), shard_kind::fleet_answer);
  if (!frame) return fail(who + ": " + describe(frame.error()));
  auto edge = decode_shard_edge(frame->payload.data(), frame->payload.size());
  if (!edge) return fail(who + ": " + describe(edge.error()));
  auto at = parse_endpoint(*edge, "--edge", true);
  if (!at) return fail(who + " names its edge '" + *edge + "': " + describe(at.error()));
  const auto& host = at->first;
  const bool anywhere = host.empty() || host == "0.0.0.0" || host == "::";
  return (anywhere ? shard.host() : host) + ":" + std::to_string(at->second);
}

caf::expected<std::vector<std::string>> configure_shard_fleet(const cleave_config& cfg,
                                                              const std::vector<remote_shard*>& shards,
                                                              const std::string& secret) {
  std::vector<std::string> edges;
  for (size_t s = 0; s < shards.size(); ++s) {
    auto edge = configure_shard(cfg, *shards[s], s, shards.size(), secret);
    if (!edge) return edge.error();
    edges.push_back(std::move(*edge));
    spdlog::info("ps: PS shard {} feeds devices at {}", s, edges.back());
  }
  return edges;
}

int coordinate_shard_fleet(cleave_config& cfg, const train_options& opts, int threads,
                           const std::vector<std::pair<std::string, uint16_t>>& shards) {
  auto secret = make_job_secret();
  if (!secret) return runtime_error(describe(secret.error()));
  caf::actor_system sys{cfg};
  // The coordinator's planner only welcomes devices: the shards' planners
  // plan, and each waits for the quorum before its first step.
  auto supervisor = start_supervisor(sys, control_plane(cfg, 0));
  auto& system = sys;
  auto planner = [&system] { return registered(system, "planner"); };
  std::optional<edge_endpoint> edge;
  std::vector<std::string> edges;
  shard_process_hooks hooks;
  hooks.before_training = [&](const std::vector<remote_shard*>& remotes) -> caf::error {
    auto configured = configure_shard_fleet(cfg, remotes, *secret);
    if (!configured) return configured.error();
    edges = std::move(*configured);
    auto adjust = [&](edge_options& eo) {
      eo.shard_edges = edges;
      eo.prove = [key = *secret](int32_t id) { return prove_device(key, id); };
    };
    auto opened = open_edge(sys, cfg, planner, adjust);
    if (!opened) return opened.error();
    edge = *opened;
    spdlog::info("ps: listening on port {} (the device edge: devices join here and are sent to {} PS shard(s)), "
                 "waiting for {} device(s)", edge->listener.port, remotes.size(), cfg.min_devices >= 0 ? cfg.min_devices : 1);
    return caf::none;
  };
  // A shard process started in place of a lost one gets the same job (the
  // same secret, so the devices' proofs hold); the devices dial the edge the
  // welcome named again, so it must listen there.
  hooks.shard_back = [&](size_t s, remote_shard& shard) -> caf::error {
    auto at = configure_shard(cfg, shard, s, shards.size(), *secret);
    if (!at) return at.error();
    if (s < edges.size() && *at != edges[s])
      return caf::make_error(caf::sec::invalid_argument,
                             "PS shard " + std::to_string(s) + " came back with its device edge at " + *at + ", not at "
                               + edges[s] + " where the devices look for it: start it again with --edge=" + edges[s]);
    spdlog::info("ps: PS shard {} feeds devices at {} again", s, *at);
    return caf::none;
  };
  // The console shows the devices the coordinator welcomed and each shard's
  // side of the run (its stats, asked for as the run goes).
  auto console = start_console(sys, cfg, planner, [&system] { return registered(system, "detector"); });
  if (!console) {
    stop(supervisor);
    return runtime_error(describe(console.error()));
  }
  hooks.console = *console;
  spdlog::info("ps: coordinating {} PS shard process(es) that feed devices", shards.size());
  const int rc = train_with_shard_processes(sys, cfg, opts, threads, shards, hooks);
  if (*console) caf::anon_send_exit(*console, caf::exit_reason::user_shutdown);
  tell_devices_run_over(sys, planner());
  if (edge) edge->close();
  stop(supervisor);
  return rc;
}

void add_shard_device_stats(nlohmann::json& one, const shard_stats& st) {
  one["bytes_down"] = st.bytes_down;
  one["bytes_up"] = st.bytes_up;
  one["tiles"] = st.tiles;
  one["local_gemms"] = st.local_gemms;
  one["issue_seconds"] = st.issue_seconds;
  one["wait_seconds"] = st.wait_seconds;
  one["egress_seconds"] = st.egress_seconds;
  one["ingress_seconds"] = st.ingress_seconds;
}

}  // namespace cleave
