// bench_transport: tensor throughput between two processes on loopback, side
// by side in one run: (a) raw TCP, blocking write/read of length-prefixed
// messages; (b) the bulk channel (CAF broker, frames) carrying float tensors;
// (c) CAF BASP: std::vector<float> sent to a remote actor, for reference;
// (d) with --tls, the bulk channel over TLS 1.3 (bulk_options::tls).
//
//   bench_transport server            prints "READY <raw> <bulk> <basp> <tls>" and
//                                     serves until killed or its parent exits
//   bench_transport client <raw> <bulk> <basp> [<tls>] [options]
//       --host H --rounds N --mib M (message size) --frames F (per bulk/raw
//       measurement) --basp-frames F --inflight K --no-basp
//       --copy (bulk sends std::vector<float>, copied once by the channel,
//       instead of a zero-copy bulk_buffer) --tls (measure TLS bulk too)
// TLS needs BENCH_TLS_DIR: a deploy/ca.sh directory with certificates
// "bench-server" (server) and "bench-client" (device); run.sh makes one. The
// server's TLS port is 0 without it.
//
// The bulk producer keeps K sends in flight and reuses the buffers the channel
// returns; the bulk sink replies with each payload so the receiving broker
// reuses it. BASP keeps K requests in flight, as in DESIGN.md's measurement.
//
// Rounds interleave raw, bulk and BASP so machine noise hits all of them
// alike; each line is one measurement, then medians and bulk/raw ratios.

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/transport/bulk_channel.hpp"

using namespace cleave::transport;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr uint16_t kind_tensor = 1;
constexpr uint16_t kind_end = 2;
constexpr uint16_t kind_ack = 3;
constexpr uint64_t raw_cap = uint64_t{1} << 30;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_transport: %s\n", what.c_str());
  std::exit(1);
}

// ------------------------------------------------------------------ raw TCP

bool read_all(int fd, void* p, size_t n) {
  auto c = static_cast<char*>(p);
  while (n > 0) {
    auto r = ::recv(fd, c, n, 0);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, const void* p, size_t n) {
  auto c = static_cast<const char*>(p);
  while (n > 0) {
    auto w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int listen_any(uint16_t& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 16) != 0)
    die("raw listen failed");
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// Serves raw clients one after another: u64 length + payload, length 0 ends a
// measurement and is answered with one byte.
void raw_server(int lfd) {
  std::vector<char> buf;
  for (;;) {
    int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) return;
    for (;;) {
      uint64_t len;
      if (!read_all(fd, &len, sizeof(len))) break;
      if (len == 0) {
        char ack = 1;
        if (!write_all(fd, &ack, 1)) break;
        continue;
      }
      if (len > raw_cap) break;
      if (buf.size() < len) buf.resize(len);
      if (!read_all(fd, buf.data(), len)) break;
    }
    ::close(fd);
  }
}

int raw_connect(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
    die("cannot resolve " + host);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, res->ai_addr, res->ai_addrlen) != 0) die("raw connect failed");
  ::freeaddrinfo(res);
  return fd;
}

double raw_round(int fd, const std::vector<float>& tensor, int frames) {
  uint64_t len = tensor.size() * sizeof(float);
  auto t0 = clock_type::now();
  for (int i = 0; i < frames; ++i) {
    if (!write_all(fd, &len, sizeof(len)) || !write_all(fd, tensor.data(), len))
      die("raw write failed");
  }
  uint64_t end = 0;
  char ack;
  if (!write_all(fd, &end, sizeof(end)) || !read_all(fd, &ack, 1)) die("raw ack failed");
  std::chrono::duration<double> dt = clock_type::now() - t0;
  return double(len) * frames / dt.count() / 1e6;
}

// ------------------------------------------------------------- bulk channel

using go_atom = caf::atom_constant<caf::atom("go")>;

// Server side: counts tensor frames, hands buffers back for reuse, answers
// the end marker on the same connection with the number of frames received.
caf::behavior bulk_sink(caf::event_based_actor* self) {
  auto frames = std::make_shared<uint64_t>(0);
  return {
    [=](bulk_opened_atom, caf::actor, uint64_t, const std::string&) {},
    [=](bulk_peer_atom, uint64_t, const std::string&, bool) {},
    [=](bulk_closed_atom, uint64_t, const std::string&) {},
    [=](bulk_frame_atom, bulk_frame& f) -> std::vector<char> {
      if (f.kind == kind_tensor) {
        ++*frames;
      } else if (f.kind == kind_end) {
        self->send(caf::actor_cast<caf::actor>(self->current_sender()), bulk_send_atom::value,
                   f.conn, kind_ack, *frames, std::vector<char>{});
        *frames = 0;
      }
      return std::move(f.payload);
    },
    [=](std::vector<char>&) {},  // our own reply's returned buffer
    [=](caf::error&) {},
  };
}

// Client side: the ack of the end marker completes a measurement.
caf::behavior ack_sink(caf::event_based_actor*, std::shared_ptr<std::promise<uint64_t>>* slot) {
  return {
    [=](bulk_opened_atom, caf::actor, uint64_t, const std::string&) {},
    [=](bulk_peer_atom, uint64_t, const std::string&, bool) {},
    [=](bulk_closed_atom, uint64_t, const std::string& reason) {
      std::fprintf(stderr, "bulk channel closed: %s\n", reason.c_str());
    },
    [=](bulk_frame_atom, bulk_frame& f) {
      if (f.kind == kind_ack && *slot) (*slot)->set_value(f.tag);
    },
  };
}

// Sends `frames` tensors with `inflight` requests outstanding, reusing each
// buffer the channel hands back, then the end marker. zero_copy: the tensor
// travels in a bulk_buffer (header room in front, swapped into the socket's
// write buffer); otherwise as std::vector<float> (copied once by the channel).
caf::behavior producer(caf::event_based_actor* self, caf::actor channel, std::vector<float> proto,
                       bool zero_copy) {
  struct st {
    int issued = 0, done = 0, frames = 0;
  };
  auto s = std::make_shared<st>();
  auto err = [=](caf::error& e) {
    std::fprintf(stderr, "send failed: %s\n", caf::to_string(e).c_str());
    std::exit(1);
  };
  auto finish_one = [=] {
    ++s->done;
    if (s->done == s->frames)
      self->send(channel, bulk_send_atom::value, kind_end, uint64_t{0}, std::vector<char>{});
    return s->issued < s->frames;
  };
  auto issue_vec = std::make_shared<std::function<void(std::vector<float>)>>();
  *issue_vec = [=](std::vector<float> buf) {
    ++s->issued;
    self->request(channel, caf::infinite, bulk_send_atom::value, kind_tensor, uint64_t(s->issued), std::move(buf))
      .then([=](std::vector<float>& back) { if (finish_one()) (*issue_vec)(std::move(back)); }, err);
  };
  const size_t bytes = proto.size() * sizeof(float);
  auto issue_buf = std::make_shared<std::function<void(bulk_buffer)>>();
  *issue_buf = [=](bulk_buffer buf) {
    ++s->issued;
    // A returned buffer comes back drained (size 0, capacity kept); resize
    // zero-fills. A producer writes its tensor here; raw TCP resends an
    // untouched buffer, so the benchmark does not add a fill on top.
    buf.resize(bytes);
    self->request(channel, caf::infinite, bulk_send_atom::value, kind_tensor, uint64_t(s->issued), std::move(buf))
      .then([=](bulk_buffer& back) { if (finish_one()) (*issue_buf)(std::move(back)); }, err);
  };
  return {
    [=](go_atom, int frames, int inflight) {
      s->issued = s->done = 0;
      s->frames = frames;
      for (int i = 0; i < std::min(inflight, frames); ++i) {
        if (zero_copy) {
          bulk_buffer b(bytes);
          std::memcpy(b.payload(), proto.data(), bytes);
          (*issue_buf)(std::move(b));
        } else {
          (*issue_vec)(proto);
        }
      }
    },
    [=](std::vector<char>&) {},  // the end marker's returned buffer
  };
}

// -------------------------------------------------------------------- BASP

caf::behavior basp_sink(caf::event_based_actor*) {
  return {[](const std::vector<float>& v) -> uint64_t { return v.size(); }};
}

caf::behavior basp_producer(caf::event_based_actor* self, caf::actor remote,
                            std::shared_ptr<std::vector<float>> tensor,
                            std::shared_ptr<std::promise<void>>* finished) {
  struct st {
    int issued = 0, done = 0, frames = 0;
  };
  auto s = std::make_shared<st>();
  auto issue = std::make_shared<std::function<void()>>();
  *issue = [=] {
    ++s->issued;
    self->request(remote, caf::infinite, *tensor)
      .then(
        [=](uint64_t) {
          ++s->done;
          if (s->issued < s->frames) (*issue)();
          else if (s->done == s->frames) (*finished)->set_value();
        },
        [=](caf::error& e) { std::fprintf(stderr, "basp failed: %s\n", caf::to_string(e).c_str()); std::exit(1); });
  };
  return {
    [=](go_atom, int frames, int inflight) {
      s->issued = s->done = 0;
      s->frames = frames;
      for (int i = 0; i < std::min(inflight, frames); ++i) (*issue)();
    },
  };
}

// The TLS context for one side from BENCH_TLS_DIR, or null without it.
std::shared_ptr<const tls_context> bench_tls(tls_side side) {
  auto dir = std::getenv("BENCH_TLS_DIR");
  if (!dir || !*dir) return nullptr;
  std::string d = dir, name = side == tls_side::server ? "bench-server" : "bench-client";
  auto ctx = make_tls_context({d + "/" + name + ".pem", d + "/" + name + ".key", d + "/ca.pem", d + "/crl.pem"}, side);
  if (!ctx) die("TLS: " + caf::to_string(ctx.error()));
  return *ctx;
}

void configure(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  // Experiment knobs (defaults: CAF's own).
  if (auto v = std::getenv("BENCH_CAF_THREADS")) cfg.set("scheduler.max-threads", std::atoi(v));
  if (auto v = std::getenv("BENCH_CAF_POLICY")) cfg.set("scheduler.policy", caf::atom_from_string(v));
  add_transport_message_types(cfg);
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
}

int run_server() {
  caf::actor_system_config cfg;
  configure(cfg);
  caf::actor_system sys{cfg};
  uint16_t raw_port = 0;
  int lfd = listen_any(raw_port);
  std::thread raw([=] { raw_server(lfd); });
  raw.detach();
  auto sink = sys.spawn(bulk_sink);
  bulk_options opts;
  opts.bind_address = "127.0.0.1";
  if (auto v = std::getenv("BENCH_SOCKBUF")) opts.socket_buffer_bytes = std::atoi(v);
  auto lst = spawn_bulk_listener(sys, 0, sink, opts);
  if (!lst) die("bulk listen: " + caf::to_string(lst.error()));
  uint16_t tls_port = 0;
  caf::actor tls_channel;
  if (auto ctx = bench_tls(tls_side::server)) {
    auto topts = opts;
    topts.tls = ctx;
    if (auto v = std::getenv("BENCH_TLS_THREADS")) topts.tls_threads = std::atoi(v);
    auto tl = spawn_bulk_listener(sys, 0, sink, topts);
    if (!tl) die("TLS bulk listen: " + caf::to_string(tl.error()));
    tls_port = tl->port;
    tls_channel = tl->channel;
  }
  auto basp = sys.spawn(basp_sink);
  auto bp = sys.middleman().publish(basp, 0, "127.0.0.1");
  if (!bp) die("publish: " + caf::to_string(bp.error()));
  std::printf("READY %u %u %u %u\n", raw_port, lst->port, *bp, tls_port);
  std::fflush(stdout);
  // Serve until the parent (run.sh) goes away or we are killed.
  auto parent = ::getppid();
  while (::getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(lst->channel, caf::exit_reason::user_shutdown);
  if (tls_channel) caf::anon_send_exit(tls_channel, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(basp, caf::exit_reason::user_shutdown);
  ::shutdown(lfd, SHUT_RDWR);
  std::_Exit(0);  // the raw thread may be blocked in accept
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run_client(int argc, char** argv) {
  if (argc < 5) die("usage: bench_transport client <raw-port> <bulk-port> <basp-port> [options]");
  uint16_t raw_port = uint16_t(std::atoi(argv[2])), bulk_port = uint16_t(std::atoi(argv[3])),
           basp_port = uint16_t(std::atoi(argv[4]));
  std::string host = "127.0.0.1";
  int rounds = 5, mib = 4, frames = 256, basp_frames = 24, inflight = 4;
  bool basp = true;
  bool zero_copy = true;
  bool tls = false;
  uint16_t tls_port = 0;
  int first_opt = 5;
  if (argc > 5 && argv[5][0] != '-') tls_port = uint16_t(std::atoi(argv[first_opt++]));
  for (int i = first_opt; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) die("missing value for " + a);
      return std::string(argv[++i]);
    };
    if (a == "--host") host = next();
    else if (a == "--rounds") rounds = std::stoi(next());
    else if (a == "--mib") mib = std::stoi(next());
    else if (a == "--frames") frames = std::stoi(next());
    else if (a == "--basp-frames") basp_frames = std::stoi(next());
    else if (a == "--inflight") inflight = std::stoi(next());
    else if (a == "--no-basp") basp = false;
    else if (a == "--copy") zero_copy = false;
    else if (a == "--tls") tls = true;
    else die("unknown option " + a);
  }
  caf::actor_system_config cfg;
  configure(cfg);
  caf::actor_system sys{cfg};

  std::vector<float> tensor(size_t(mib) << 18);  // mib MiB of floats
  for (size_t i = 0; i < tensor.size(); ++i) tensor[i] = float(i % 1000) * 0.001f;
  const double bytes_per = double(tensor.size() * sizeof(float));

  int raw_fd = raw_connect(host, raw_port);

  std::shared_ptr<std::promise<uint64_t>> ack_slot;
  auto client_sink = sys.spawn(ack_sink, &ack_slot);
  bulk_options opts;
  if (auto v = std::getenv("BENCH_SOCKBUF")) opts.socket_buffer_bytes = std::atoi(v);
  auto ch = connect_bulk(sys, host, bulk_port, client_sink, opts);
  if (!ch) die("bulk connect: " + caf::to_string(ch.error()));
  auto prod = sys.spawn(producer, *ch, tensor, zero_copy);

  // The same channel over TLS, to the server's TLS listener.
  std::shared_ptr<std::promise<uint64_t>> tls_ack_slot;
  caf::actor tls_sink, tls_ch, tls_prod;
  if (tls) {
    if (tls_port == 0) die("--tls: the server has no TLS port (set BENCH_TLS_DIR, or use run.sh)");
    auto topts = opts;
    topts.tls = bench_tls(tls_side::client);
    if (!topts.tls) die("--tls needs BENCH_TLS_DIR");
    if (auto v = std::getenv("BENCH_TLS_THREADS")) topts.tls_threads = std::atoi(v);
    tls_sink = sys.spawn(ack_sink, &tls_ack_slot);
    auto c = connect_bulk(sys, host, tls_port, tls_sink, topts);
    if (!c) die("TLS bulk connect: " + caf::to_string(c.error()));
    tls_ch = *c;
    tls_prod = sys.spawn(producer, tls_ch, tensor, zero_copy);
  }

  caf::actor basp_prod;
  std::shared_ptr<std::promise<void>> basp_slot;
  if (basp) {
    auto remote = sys.middleman().remote_actor(host, basp_port);
    if (!remote) die("remote_actor: " + caf::to_string(remote.error()));
    basp_prod = sys.spawn(basp_producer, *remote, std::make_shared<std::vector<float>>(tensor), &basp_slot);
  }

  auto bulk_round = [&](bool over_tls = false) {
    auto& slot = over_tls ? tls_ack_slot : ack_slot;
    slot = std::make_shared<std::promise<uint64_t>>();
    auto fut = slot->get_future();
    auto t0 = clock_type::now();
    caf::anon_send(over_tls ? tls_prod : prod, go_atom::value, frames, inflight);
    auto got = fut.get();
    std::chrono::duration<double> dt = clock_type::now() - t0;
    if (got != uint64_t(frames)) die("bulk: server counted " + std::to_string(got) + " frames");
    return bytes_per * frames / dt.count() / 1e6;
  };
  auto basp_round = [&] {
    basp_slot = std::make_shared<std::promise<void>>();
    auto fut = basp_slot->get_future();
    auto t0 = clock_type::now();
    caf::anon_send(basp_prod, go_atom::value, basp_frames, inflight);
    fut.get();
    std::chrono::duration<double> dt = clock_type::now() - t0;
    return bytes_per * basp_frames / dt.count() / 1e6;
  };

  std::printf("message %d MiB of float32, %d messages per raw/bulk measurement, %d per BASP, "
              "%d in flight, %d rounds, bulk payload %s\n", mib, frames, basp_frames, inflight, rounds,
              zero_copy ? "bulk_buffer (zero-copy)" : "std::vector<float> (one copy)");
  // Warm-up (not reported): connections, buffers, page cache of the pools.
  raw_round(raw_fd, tensor, std::max(1, frames / 8));
  {
    auto f = frames;
    frames = std::max(1, frames / 8);
    bulk_round();
    if (tls) bulk_round(true);
    frames = f;
  }
  std::vector<double> raw_v, bulk_v, basp_v, ratio_v, tls_v, tls_ratio_v;
  for (int r = 1; r <= rounds; ++r) {
    // Alternate which goes first, so drift does not favour one side; raw
    // runs once per round and both bulk paths are compared with it.
    double raw_mbs, bulk_mbs, tls_mbs = 0;
    if (r % 2) {
      raw_mbs = raw_round(raw_fd, tensor, frames);
      bulk_mbs = bulk_round();
      if (tls) tls_mbs = bulk_round(true);
    } else {
      if (tls) tls_mbs = bulk_round(true);
      bulk_mbs = bulk_round();
      raw_mbs = raw_round(raw_fd, tensor, frames);
    }
    double basp_mbs = basp ? basp_round() : 0;
    raw_v.push_back(raw_mbs);
    bulk_v.push_back(bulk_mbs);
    basp_v.push_back(basp_mbs);
    ratio_v.push_back(bulk_mbs / raw_mbs);
    tls_v.push_back(tls_mbs);
    tls_ratio_v.push_back(tls_mbs / raw_mbs);
    std::printf("round %d: raw %8.1f MB/s  bulk %8.1f MB/s  basp %7.1f MB/s  bulk/raw %.3f%s%s\n", r,
                raw_mbs, bulk_mbs, basp_mbs, bulk_mbs / raw_mbs,
                basp ? ("  basp/raw " + std::to_string(basp_mbs / raw_mbs).substr(0, 5)).c_str() : "",
                tls ? ("  tls " + std::to_string(tls_mbs).substr(0, 7) + " MB/s  tls/raw " +
                       std::to_string(tls_mbs / raw_mbs).substr(0, 5)).c_str()
                    : "");
    std::fflush(stdout);
  }
  std::printf("median: raw %.1f MB/s  bulk %.1f MB/s  basp %.1f MB/s  bulk/raw %.3f (min %.3f, max %.3f)\n",
              median(raw_v), median(bulk_v), median(basp_v), median(ratio_v),
              *std::min_element(ratio_v.begin(), ratio_v.end()),
              *std::max_element(ratio_v.begin(), ratio_v.end()));
  if (tls)
    std::printf("median TLS: tls bulk %.1f MB/s  tls/raw %.3f (min %.3f, max %.3f)  tls/bulk %.3f\n",
                median(tls_v), median(tls_ratio_v), *std::min_element(tls_ratio_v.begin(), tls_ratio_v.end()),
                *std::max_element(tls_ratio_v.begin(), tls_ratio_v.end()), median(tls_v) / median(bulk_v));
  ::close(raw_fd);
  caf::anon_send_exit(prod, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*ch, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(client_sink, caf::exit_reason::user_shutdown);
  if (basp_prod) caf::anon_send_exit(basp_prod, caf::exit_reason::user_shutdown);
  for (auto& a : {tls_prod, tls_ch, tls_sink})
    if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  std::fflush(stdout);
  std::_Exit(median(ratio_v) >= 0.5 && (!tls || median(tls_ratio_v) >= 0.5) ? 0 : 2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "server") return run_server();
  if (argc >= 2 && std::string(argv[1]) == "client") return run_client(argc, argv);
  std::fprintf(stderr,
               "usage: bench_transport server | client <raw-port> <bulk-port> <basp-port> [<tls-port>] "
               "[--host H] [--rounds N] [--mib M] [--frames F] [--basp-frames F] "
               "[--inflight K] [--no-basp] [--copy] [--tls]\n");
  return 1;
}
