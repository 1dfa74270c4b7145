// swarm: N light devices in one process, for load on one ps's device edge.
// Each is the project's own device: a device_actor behind an edge_link
// (actors/device/), with its own connection to the edge, framed by the bulk
// channel and the edge codec like any --role=device process. It joins,
// heartbeats at the interval the welcome gives, and computes the tiles it is
// sent (unpaced: as fast as this process can), so a training run over a
// swarm takes the same trajectory as over device processes. On command some
// devices lie (corrupt results), stall (fall silent, connection open) or
// drop (connection closed).
//
//   swarm --connect=HOST:PORT --devices=N [--profile=phone] [--seconds=S]
//         [--join-timeout=S] [--threads=T] [--liars=K --lie=KIND:RATE,...]
//         [--stall=K] [--drop=K] [--after=S] [--log-level=warn]
//
// Prints one line when every device has joined (or at --join-timeout):
//   joined 1000 of 1000 in 1.84 s
// then, every 5 s and at the end, how many are still in the fleet:
//   t=60.0 s: 1000 joined, 1000 connected, 0 lost
// With --seconds=0 it runs until every device has left (the run is over).
// Exit status: 0 when every device joined and none was lost unbidden.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/device/device_actor.hpp"
#include "actors/device/edge_link.hpp"
#include "actors/device/lies.hpp"
#include "actors/transport/fd_limit.hpp"
#include "kernels/gemm.hpp"
#include "schema/endpoint.hpp"
#include "schema/errors.hpp"
#include "schema/messages.hpp"
#include "schema/profile.hpp"

namespace {

using namespace cleave;
using clock_type = std::chrono::steady_clock;

struct swarm_args {
  std::string connect;
  int devices = 100;
  std::string profile = "phone";
  double seconds = 30;
  double join_timeout = 30;
  int threads = 2;
  int liars = 0;
  std::string lie;
  int stall = 0;
  int drop = 0;
  double after = 5;
  std::string log_level = "warn";
};

int usage(const std::string& why) {
  std::fprintf(stderr, "swarm: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: swarm --connect=HOST:PORT --devices=N [--profile=phone] [--seconds=S] "
               "[--join-timeout=S] [--threads=T] [--liars=K --lie=SPEC] [--stall=K] [--drop=K] "
               "[--after=S] [--log-level=L]\n");
  return 2;
}

// "--name=value" flags only; every value is checked by the caller.
caf::expected<swarm_args> parse(int argc, char** argv) {
  swarm_args a;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg{argv[i]};
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string_view::npos) return fail("not --name=value: " + std::string{arg});
    const std::string name{arg.substr(2, eq - 2)};
    const std::string value{arg.substr(eq + 1)};
    char* end = nullptr;
    auto number = [&](double& out) -> caf::error {
      out = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(out >= 0)) return fail("--" + name + " takes a number >= 0");
      return caf::none;
    };
    auto count = [&](int& out) -> caf::error {
      double v = 0;
      if (auto err = number(v)) return err;
      if (v != static_cast<int>(v) || v > 1e6) return fail("--" + name + " takes a whole number up to 1e6");
      out = static_cast<int>(v);
      return caf::none;
    };
    caf::error err;
    if (name == "connect") a.connect = value;
    else if (name == "devices") err = count(a.devices);
    else if (name == "profile") a.profile = value;
    else if (name == "seconds") err = number(a.seconds);
    else if (name == "join-timeout") err = number(a.join_timeout);
    else if (name == "threads") err = count(a.threads);
    else if (name == "liars") err = count(a.liars);
    else if (name == "lie") a.lie = value;
    else if (name == "stall") err = count(a.stall);
    else if (name == "drop") err = count(a.drop);
    else if (name == "after") err = number(a.after);
    else if (name == "log-level") a.log_level = value;
    else return fail("unknown flag --" + name);
    if (err) return err;
  }
  if (a.connect.empty()) return fail("--connect is required");
  if (a.devices < 1) return fail("--devices must be at least 1");
  if (a.threads < 1) return fail("--threads must be at least 1");
  if (a.liars + a.stall + a.drop > a.devices) return fail("--liars, --stall and --drop exceed --devices");
  if (a.liars > 0 && a.lie.empty()) return fail("--liars needs --lie=KIND:RATE,...");
  return a;
}

struct member {
  caf::actor link;
  caf::actor device;
  bool gone = false;
  bool bidden = false;  // stalled or dropped on command: its loss is expected
};

}  // namespace

int main(int argc, char** argv) {
  auto args = parse(argc, argv);
  if (!args) return usage(describe(args.error()));
  auto level = spdlog::level::from_str(args->log_level);
  spdlog::set_level(level);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  auto at = parse_endpoint(args->connect, "--connect", false);
  if (!at) return usage(describe(at.error()));
  auto profile = preset_profile(args->profile);
  if (!profile) return usage(describe(profile.error()));
  std::vector<lie> lies;
  if (!args->lie.empty()) {
    auto parsed = parse_lies(args->lie);
    if (!parsed) return usage("--lie=" + args->lie + ": " + describe(parsed.error()));
    lies = std::move(*parsed);
  }
  // Two descriptors a device at most (its socket, and CAF's pipe is shared).
  if (auto err = transport::ensure_fd_limit(static_cast<size_t>(args->devices) + 64)) {
    std::fprintf(stderr, "swarm: %s\n", describe(err).c_str());
    return 1;
  }
  set_gemm_threads(1);

  caf::actor_system_config cfg;
  add_cleave_message_types(cfg);
  transport::add_transport_message_types(cfg);
  cfg.load<caf::io::middleman>();
  cfg.set("scheduler.max-threads", args->threads);
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};

  auto joined = std::make_shared<std::atomic<int>>(0);
  device_options dopt;
  dopt.profile = *profile;
  dopt.paced = false;
  dopt.cache_bytes = uint64_t{4} << 20;  // tiny tiles: a few blocks each
  edge_link_options lopt;
  lopt.host = at->first;
  lopt.port = at->second;
  lopt.on_welcome = [joined](const edge_welcome_msg&) { joined->fetch_add(1); };

  caf::scoped_actor self{sys};
  std::vector<member> fleet(static_cast<size_t>(args->devices));
  const auto start = clock_type::now();
  int unreachable = 0;
  for (size_t i = 0; i < fleet.size(); ++i) {
    auto link = connect_edge(sys, lopt);
    if (!link) {
      if (unreachable++ == 0) spdlog::warn("swarm: device {} cannot connect: {}", i, describe(link.error()));
      fleet[i].gone = true;
      continue;
    }
    auto d = dopt;
    if (static_cast<int>(i) < args->liars) {
      d.lies = lies;
      d.lie_seed = 1;
      d.fleet_index = static_cast<int32_t>(i);
    }
    fleet[i].link = *link;
    fleet[i].device = sys.spawn(device_actor, d, *link);
    self->monitor(fleet[i].device);
  }
  auto seconds_since = [&](clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
  };
  int lost = 0, lost_unbidden = 0, finished = 0;
  auto drain_downs = [&](std::chrono::milliseconds wait) {
    bool any = true;
    while (any) {
      any = false;
      self->receive(
        [&](const caf::down_msg& down) {
          any = true;
          for (auto& m : fleet)
            if (!m.gone && m.device && m.device.address() == down.source) {
              m.gone = true;
              if (down.reason == caf::exit_reason::normal) {  // the ps ended the run
                ++finished;
                continue;
              }
              ++lost;
              if (!m.bidden && ++lost_unbidden <= 5)
                spdlog::warn("swarm: a device left: {}", sys.render(down.reason));
            }
          wait = std::chrono::milliseconds(0);
        },
        caf::after(wait) >> [] {});
    }
  };
  const int target = args->devices - unreachable;
  while (joined->load() + lost + finished < target && seconds_since(start) < args->join_timeout)
    drain_downs(std::chrono::milliseconds(20));
  const double join_seconds = seconds_since(start);
  std::printf("joined %d of %d in %.2f s\n", joined->load(), args->devices, join_seconds);
  std::fflush(stdout);

  // Commands: the devices after the liars stall, the next ones drop.
  bool commanded = args->stall + args->drop == 0;
  auto next_report = clock_type::now() + std::chrono::seconds(5);
  const auto began = clock_type::now();
  auto connected = [&] {
    int n = 0;
    for (auto& m : fleet) n += !m.gone;
    return n;
  };
  auto report = [&] {
    std::printf("t=%.1f s: %d joined, %d connected, %d lost (%d unbidden), %d finished the run\n",
                seconds_since(start), joined->load(), connected(), lost, lost_unbidden, finished);
    std::fflush(stdout);
  };
  while (args->seconds == 0 ? connected() > 0 : seconds_since(began) < args->seconds) {
    drain_downs(std::chrono::milliseconds(100));
    if (!commanded && seconds_since(began) >= args->after) {
      commanded = true;
      size_t i = static_cast<size_t>(args->liars);
      // A stalled device is its connection without the device behind it: no
      // heartbeats, no answers, the socket open (a real device refuses the
      // emulated hang_atom). The ps should suspect it, then declare it dead.
      for (int k = 0; k < args->stall && i < fleet.size(); ++k, ++i) {
        fleet[i].bidden = true;
        if (fleet[i].device) self->send_exit(fleet[i].device, caf::exit_reason::kill);
      }
      for (int k = 0; k < args->drop && i < fleet.size(); ++k, ++i) {
        fleet[i].bidden = true;
        if (fleet[i].link) self->send_exit(fleet[i].link, caf::exit_reason::kill);
      }
      std::printf("t=%.1f s: %d devices stalled, %d dropped\n", seconds_since(start), args->stall, args->drop);
    }
    if (clock_type::now() >= next_report) {
      report();
      next_report += std::chrono::seconds(5);
    }
  }
  report();
  const bool all_joined = joined->load() == args->devices;
  for (auto& m : fleet) {
    m.bidden = true;  // leaving now is the swarm's own doing
    if (!m.gone && m.link) self->send_exit(m.link, caf::exit_reason::user_shutdown);
  }
  drain_downs(std::chrono::milliseconds(200));
  return all_joined && lost_unbidden == 0 ? 0 : 1;
}
