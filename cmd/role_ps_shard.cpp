// --role=ps-shard: one parameter-server shard as a process of its own. It
// listens on --listen for its coordinator (`--role=ps --shards=...`), holds
// its slice of every parameter with gradients and AdamW moments, computes
// its products on the local GEMM (or, with --edge, on the devices that join
// its own device edge: actors/ps/shards/shard_fleet.hpp), and exits 0 once its
// coordinator ends the job. A coordinator that vanishes without ending it
// (killed) is waited for up to --coordinator-timeout, the slices and the
// device edge kept, so that one restarted with --resume finds the shard
// where it was (actors/ps/shards/coordinator_watch.hpp); past that the
// process exits 1 with the reason.
// Every frame is capped and checked before anything is sized
// (actors/transport, schema/shard_codec.hpp): a peer that sends garbage is
// refused and closed, and the shard goes on serving. With --tls-* the link
// is TLS 1.3 against the job's CA, and only a certificate that could serve
// (the coordinator's, not a device's) attaches; --edge's devices are
// checked as at the ps's edge.
//
// With --checkpoint-dir the shard writes its own slices there when its
// coordinator checkpoints, and loads them back when the coordinator resumes
// or rolls back (schema/shard_checkpoint_file.hpp): the coordinator names
// the file, so a restarted shard needs no state of its own; --resume only
// says so in the log.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "actors/ps/shards/shard_fleet.hpp"
#include "actors/ps/shards/shard_server.hpp"
#include "cmd/fleet_job.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"
#include "schema/job_proof.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "training/process_memory.hpp"

namespace cleave {

namespace {

// --edge's side of the job: a planner and detector of this shard's own,
// the device edge (`edge`: --edge as given), and the engine over them.
open_shard_site open_edge_site(caf::actor_system& sys, cleave_config& cfg, std::string edge) {
  return [&sys, &cfg, edge](const shard_fleet_msg& job) -> caf::expected<shard_fleet_site> {
    take_fleet_job(cfg, job);
    auto supervisor = start_supervisor(sys, control_plane(cfg, job.min_devices));
    auto planner = [&sys] { return registered(sys, "planner"); };
    auto admit = [secret = job.secret](edge_options& eo) {
      eo.admit_join = [secret](const edge_join_msg& join) -> caf::error {
        auto id = check_job_token(secret, join.token);
        return id ? caf::error{} : id.error();
      };
    };
    auto opened = open_edge(sys, cfg, planner, admit, edge);
    if (!opened) {
      stop(supervisor);
      return opened.error();
    }
    const auto at = parse_endpoint(edge, "--edge", true);
    shard_fleet_site site;
    site.address = (at ? at->first : std::string{}) + ":" + std::to_string(opened->listener.port);
    site.close = [endpoint = *opened, supervisor] {
      endpoint.close();
      stop(supervisor);
    };
    auto eo = engine_opts(cfg);
    eo.find_planner = planner;
    eo.shard = job.shard;
    site.engine = std::make_unique<distributed_gemm>(sys, planner(), eo);
    spdlog::info("ps-shard: shard {} of {}; devices join its edge on port {}{}", job.shard, job.shards,
                 opened->listener.port, cfg.pace_ps_link ? " (its link paced)" : "");
    return site;
  };
}

}  // namespace

int run_ps_shard(cleave_config& cfg) {
  if (cfg.listen.empty()) return usage_error("--role=ps-shard needs --listen=[host:]port (its coordinator dials it)");
  auto endpoint = parse_endpoint(cfg.listen, "--listen", true);
  if (!endpoint) return usage_error(describe(endpoint.error()));
  auto link_tls = shard_link_tls(cfg);
  if (!link_tls) return usage_error("TLS for the link to the coordinator: " + describe(link_tls.error()));
  if (!cfg.join_tokens.empty()) return usage_error("--join-tokens is for the ps's edge: a shard admits the devices it welcomed");
  if (!cfg.edge.empty()) {
    if (auto at = parse_endpoint(cfg.edge, "--edge", true); !at) return usage_error(describe(at.error()));
    // Bad certificate files are a usage error now, not at the coordinator's request.
    if (auto tls = edge_tls(cfg, transport::tls_side::server); !tls)
      return usage_error("TLS for the device edge: " + describe(tls.error()));
  }
  if (cfg.resume && cfg.checkpoint_dir.empty())
    return usage_error("--resume on a PS shard needs --checkpoint-dir (where its own checkpoint files are)");
  if (!cfg.checkpoint_dir.empty()) {
    // Refused now, not at the first checkpoint, which would cost the run its steps since the last one.
    std::error_code ec;
    if (!std::filesystem::is_directory(cfg.checkpoint_dir, ec))
      return usage_error("--checkpoint-dir " + cfg.checkpoint_dir + " is not a directory");
    if (::access(cfg.checkpoint_dir.c_str(), W_OK | X_OK) != 0)
      return usage_error("--checkpoint-dir " + cfg.checkpoint_dir + " is not writable");
    if (cfg.resume) {
      size_t files = 0;
      for (std::filesystem::directory_iterator it(cfg.checkpoint_dir, ec), end; !ec && it != end; it.increment(ec))
        files += it->path().extension() == ".clvshard";
      spdlog::info("ps-shard: --resume: {} shard checkpoint file(s) in {}; the coordinator names the one to load",
                   files, cfg.checkpoint_dir);
    }
  }
  caf::actor_system sys{cfg};
  std::unique_ptr<shard_fleet> fleet;
  if (!cfg.edge.empty()) fleet = std::make_unique<shard_fleet>(open_edge_site(sys, cfg, cfg.edge));
  // With devices, a product blocks its caller while tiles are out: a thread of its own.
  auto server = fleet ? sys.spawn<caf::detached>(shard_server_with_devices, static_cast<shard_devices*>(fleet.get()),
                                                      cfg.checkpoint_dir, cfg.coordinator_timeout)
                      : sys.spawn(shard_server, cfg.checkpoint_dir, cfg.coordinator_timeout);
  auto ended = std::make_shared<std::atomic<bool>>(false);
  // Why the server quit, when not because the job ended (no coordinator came back).
  auto failure = std::make_shared<std::string>();
  server->attach_functor([ended, failure](const caf::error& reason) {
    if (reason && reason != caf::exit_reason::normal && reason != caf::exit_reason::user_shutdown)
      *failure = describe(reason);
    ended->store(true);  // after *failure: the main thread reads it once it sees this
  });
  auto link = shard_channel_options(endpoint->first);
  link.tls = *link_tls;
  if (!link.tls) warn_if_exposed(endpoint->first, "the PS shard's link");
  auto listener = transport::spawn_bulk_listener(sys, endpoint->second, server, link);
  if (!listener) {
    caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
    return runtime_error("cannot listen on " + cfg.listen + ": " + describe(listener.error()));
  }
  spdlog::info("ps-shard: listening on port {} (framed: one coordinator's requests{})", listener->port,
               link.tls ? ", under TLS" : "");
  stop_on_signals();
  while (!stop_requested() && !ended->load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const bool expired = ended->load() && !failure->empty();
  spdlog::info("ps-shard: {}; peak RSS {:.1f} MiB", expired ? "giving up" : ended->load() ? "done" : "stopping",
               static_cast<double>(peak_rss_bytes()) / (1 << 20));
  caf::anon_send_exit(listener->channel, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
  if (fleet) {
    // The server may still be inside a product on the engine: the engine goes after it.
    for (int i = 0; i < 100 && !ended->load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!ended->load()) (void) fleet.release();
  }
  return expired ? runtime_error(*failure) : 0;
}

}  // namespace cleave
