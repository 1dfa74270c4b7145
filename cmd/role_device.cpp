// --role=device: one device process. It joins the ps's device edge at
// --connect (framed, never BASP), takes tiles until the ps says the run is
// over, and exits 0. A ps that vanishes without that word is given
// --reconnect-seconds to come back (a ps restarted with --resume gets its
// fleet back this way); past that the device exits 1 with one line. --stay
// waits for the next run instead of exiting, however the last one ended.

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/device/device_actor.hpp"
#include "actors/device/edge_link.hpp"
#include "actors/device/shard_links.hpp"
#include "actors/transport/certificates.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "kernels/gemm.hpp"
#include "schema/atomic_file.hpp"
#include "schema/errors.hpp"
#include "schema/profile.hpp"
#include "training/process_memory.hpp"

namespace cleave {

namespace {

// Runs the device actor until it leaves, and says why it left: normal when
// the ps ended the run; otherwise the ps was lost, or refused the device
// (is_edge_refusal). A stop request ends it too.
// A welcome that names shard processes' edges connects the device to them
// too (shard_links.hpp), for as long as it serves the ps, dialling again any
// whose connection closes.
// Before the shards are dialled, before_shards may change their links (a
// certificate enrolled on this connection).
caf::error serve(caf::actor_system& sys, const device_options& dopt, const caf::actor& link,
                 shard_edges_slot& welcome, shard_links& shards,
                 const std::function<void(shard_links&)>& before_shards) {
  auto device = sys.spawn(device_actor, dopt, link);
  caf::scoped_actor self{sys};
  self->monitor(device);
  bool gone = false;
  caf::error why = caf::exit_reason::user_shutdown;
  std::vector<std::string> edges;
  int32_t id = -1;
  std::string proof;
  while (!gone && !stop_requested()) {
    self->receive(
      [&](const caf::down_msg& down) {
        gone = true;
        why = down.reason;
      },
      caf::after(std::chrono::milliseconds(shards.size() == 0 ? 20 : 200)) >> [] {});
    if (gone) break;
    if (welcome.take(edges, id, proof)) {
      before_shards(shards);
      shards.open(edges, id, proof);
    } else {
      shards.tend();
    }
  }
  shards.close();
  if (!gone) self->send_exit(device, caf::exit_reason::user_shutdown);
  self->send_exit(link, caf::exit_reason::user_shutdown);
  return why;
}

// A device with a join token and no certificate yet makes its key (written
// to --tls-key, readable by its owner only) and a request, and trades the
// token for a certificate at its first join (written to --tls-cert). Until
// then it shows the ps no certificate.
caf::error prepare_enrolment(const cleave_config& cfg, edge_link_options& lopt) {
  std::string name = cfg.device_name;
  if (name.empty()) {
    char host[64] = {0};
    ::gethostname(host, sizeof(host) - 1);
    name = std::string{"device-"} + host;
  }
  auto made = transport::make_key_and_request(name);
  if (!made) return made.error();
  const mode_t old_mask = ::umask(077);
  auto err = write_file_atomically(cfg.tls_key, {made->key_pem}, "device key");
  ::umask(old_mask);
  if (err) return err;
  auto ctx = transport::make_tls_context({"", "", cfg.tls_ca, ""}, transport::tls_side::client);
  if (!ctx) return ctx.error();
  lopt.channel.tls = *ctx;
  lopt.token = cfg.join_token;
  lopt.csr = made->csr_pem;
  lopt.on_certificate = [path = cfg.tls_cert](const std::string& pem) {
    if (auto err = write_file_atomically(path, {pem}, "device certificate"))
      spdlog::error("device: cannot keep the certificate the ps signed: {}", describe(err));
    else
      spdlog::info("device: the ps signed a certificate for this device; it is at {}", path);
  };
  spdlog::info("device: no certificate at {} yet; trading the join token for one as '{}'", cfg.tls_cert, name);
  return caf::none;
}

// What this device declares: a preset (--profile, vm by default), or its own
// figures in a fleet file of exactly one device (--fleet), so that a device
// on a link of known rates (a shaped test link, a measured uplink) can say
// so where no preset fits.
caf::expected<device_profile> device_profile_of(const cleave_config& cfg) {
  if (cfg.fleet.empty()) return preset_profile(cfg.profile.empty() ? "vm" : cfg.profile);
  if (!cfg.profile.empty()) return fail("--profile and --fleet name this device's profile twice: give one");
  auto fleet = read_fleet_file(cfg.fleet);
  if (!fleet) return fleet.error();
  if (fleet->size() != 1)
    return fail(cfg.fleet + ": a device process declares one profile, the file describes "
                + std::to_string(fleet->size()) + " devices");
  return fleet->front();
}

}  // namespace

int run_device(cleave_config& cfg, int threads) {
  std::vector<lie> lies;
  if (!cfg.lie.empty()) {
    auto parsed = parse_lies(cfg.lie);
    if (!parsed) return usage_error("--lie=" + cfg.lie + ": " + describe(parsed.error()));
    lies = std::move(*parsed);
  }
  // Where to join: the ps's edge or a relay's, or several, tried in turn.
  constexpr size_t most_endpoints = 64;
  auto endpoints = parse_endpoint_list(cfg.connect, "--connect", most_endpoints, "addresses");
  if (!endpoints) return usage_error(describe(endpoints.error()));
  size_t next_endpoint = 0;
  auto profile = device_profile_of(cfg);
  if (!profile) return usage_error(describe(profile.error()));
  set_gemm_threads(threads);
  caf::actor_system sys{cfg};
  device_options dopt;
  dopt.profile = *profile;
  dopt.paced = false;  // a real device is as fast as it is
  dopt.heartbeat_seconds = cfg.heartbeat;
  if (!lies.empty()) {
    spdlog::warn("this device corrupts results on purpose (--lie={})", cfg.lie);
    dopt.lies = std::move(lies);
    dopt.lie_seed = static_cast<uint64_t>(cfg.seed);
  }
  edge_link_options lopt;
  const bool enrolling = !cfg.join_token.empty() && !std::filesystem::exists(cfg.tls_cert);
  if (enrolling) {
    if (auto err = prepare_enrolment(cfg, lopt)) return runtime_error(describe(err));
  } else {
    auto tls = edge_tls(cfg, transport::tls_side::client);
    if (!tls) return usage_error(describe(tls.error()));
    lopt.channel.tls = *tls;
  }
  lopt.welcomed = std::make_shared<std::atomic<bool>>(false);
  auto welcome = std::make_shared<shard_edges_slot>();
  lopt.on_welcome = [welcome](const edge_welcome_msg& w) { welcome->put(w); };
  stop_on_signals();
  using clock = std::chrono::steady_clock;
  const double forever = std::numeric_limits<double>::infinity();
  // The device keeps trying until this long after it was last in a fleet
  // (or started): a connection the ps accepts but never welcomes does not
  // count, or a ps that turns it away would keep it trying forever.
  double patience = cfg.reconnect_seconds;
  auto since = clock::now();
  bool ever_joined = false;
  std::string last_loss;
  for (int attempt = 0; !stop_requested(); ++attempt) {
    if (!lopt.csr.empty() && std::filesystem::exists(cfg.tls_cert)) {  // enrolled: show the certificate
      auto tls = edge_tls(cfg, transport::tls_side::client);
      if (!tls) return runtime_error(describe(tls.error()));
      lopt.channel.tls = *tls;
      lopt.token.clear();
      lopt.csr.clear();
      lopt.on_certificate = nullptr;
    }
    const double left = patience - std::chrono::duration<double>(clock::now() - since).count();
    auto link = attempt > 0 && left <= 0 ? caf::expected<caf::actor>{fail(last_loss)}
                                         : reach(std::max(left, 0.0), [&] {
                                             lopt.host = (*endpoints)[next_endpoint].first;
                                             lopt.port = (*endpoints)[next_endpoint].second;
                                             auto link = connect_edge(sys, lopt);
                                             if (!link) next_endpoint = (next_endpoint + 1) % endpoints->size();
                                             return link;
                                           });
    if (!link) {
      if (stop_requested()) break;
      const auto why = describe(link.error());
      if (!ever_joined) return runtime_error("cannot join the ps at " + cfg.connect + ": " + why);
      return runtime_error("the ps at " + cfg.connect + " went away without ending the run and did "
                           "not come back within " + std::to_string(static_cast<int>(patience))
                           + " s");
    }
    spdlog::info("device: {} {}:{} as a '{}' device", attempt == 0 ? "connected to" : "reconnected to",
                 lopt.host, lopt.port, profile->name);
    lopt.welcomed->store(false);
    shard_links shards(sys, dopt, lopt.channel);
    // The ps signs an enrolling device's certificate before it welcomes it:
    // the shards' edges, which take no join token, see that certificate.
    auto with_new_certificate = [&](shard_links& s) {
      if (lopt.csr.empty() || !std::filesystem::exists(cfg.tls_cert)) return;
      if (auto tls = edge_tls(cfg, transport::tls_side::client))
        s.use_tls(*tls);
      else
        spdlog::warn("device: the certificate the ps signed does not load ({}); the shards will refuse this device",
                     describe(tls.error()));
    };
    const auto why = serve(sys, dopt, *link, *welcome, shards, with_new_certificate);
    if (stop_requested()) break;
    if (is_edge_refusal(why)) return runtime_error(describe(why));
    const bool run_over = why == caf::exit_reason::normal;
    if (run_over && !cfg.stay) {
      const uint64_t peak = peak_rss_bytes();
      spdlog::info("device: the run is over; exiting (peak RSS {:.1f} MiB)", static_cast<double>(peak) / (1 << 20));
      // The planner sized this device's tiles and cache to the memory it
      // declared; a process past it is one the planner misjudged.
      if (peak > dopt.profile.memory_bytes)
        spdlog::warn("device: peak RSS {:.1f} MiB is above the {:.1f} MiB profile '{}' declares",
                     static_cast<double>(peak) / (1 << 20), static_cast<double>(dopt.profile.memory_bytes) / (1 << 20),
                     dopt.profile.name);
      return 0;
    }
    last_loss = describe(why);
    if (!run_over) next_endpoint = (next_endpoint + 1) % endpoints->size();  // a lost relay: try the next
    spdlog::info(run_over ? "device: the run is over; waiting for the next one (--stay)"
                          : "device: lost the ps ({}); reconnecting", last_loss);
    if (lopt.welcomed->load()) {
      ever_joined = true;
      since = clock::now();
      patience = cfg.stay ? forever : cfg.reconnect_seconds;
    }
    // The ps that ended its run closes its port in a moment, and a refused
    // join must not turn into a tight loop against the ps.
    std::this_thread::sleep_for(std::chrono::milliseconds(run_over ? 1000 : 500));
  }
  return 0;
}

}  // namespace cleave
