#pragma once
// What the bulk channel's end-to-end tests share: an actor system with the
// io middleman, a sink that collects what the channel delivers, and raw
// peers that speak the framing by hand.

#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <gtest/gtest.h>

#include "actors/transport/bulk_channel.hpp"
#include "actors/transport/frame.hpp"
#include "schema/errors.hpp"
#include "tests/raw_client.hpp"

namespace cleave::testing {

using namespace cleave::transport;
using namespace std::chrono_literals;

// Everything a test sink saw, for the test thread to wait on.
struct collector {
  std::mutex mx;
  std::condition_variable cv;
  std::vector<bulk_frame> frames;
  std::vector<std::pair<uint64_t, std::string>> closed;
  std::vector<std::pair<uint64_t, caf::actor>> opened;
  std::vector<std::pair<uint64_t, std::string>> peers;  // TLS certificate names
  std::vector<caf::response_promise> held;  // replies withheld (backpressure test)

  template <class Pred>
  bool wait(Pred pred, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lk(mx);
    return cv.wait_for(lk, timeout, [&] { return pred(); });
  }

  // Why the k-th connection closed, once it has (empty if it never does).
  std::string closed_reason(size_t k) {
    EXPECT_TRUE(wait([&] { return closed.size() > k; }));
    std::lock_guard<std::mutex> lk(mx);
    return closed.size() > k ? closed[k].second : std::string{};
  }
};

using release_atom = caf::atom_constant<caf::atom("release")>;

inline caf::behavior sink_fun(caf::event_based_actor* self, std::shared_ptr<collector> col, bool hold) {
  return {
    [=](bulk_opened_atom, caf::actor ch, uint64_t conn, const std::string&) {
      std::lock_guard<std::mutex> lk(col->mx);
      col->opened.emplace_back(conn, ch);
      col->cv.notify_all();
    },
    [=](bulk_frame_atom, bulk_frame& f) -> caf::result<void> {
      std::lock_guard<std::mutex> lk(col->mx);
      col->frames.push_back(std::move(f));
      col->cv.notify_all();
      if (hold) {
        auto rp = self->make_response_promise();
        col->held.push_back(rp);
        return rp;
      }
      return caf::unit;
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      std::lock_guard<std::mutex> lk(col->mx);
      col->closed.emplace_back(conn, reason);
      col->cv.notify_all();
    },
    [=](bulk_peer_atom, uint64_t conn, const std::string& name, bool) {
      std::lock_guard<std::mutex> lk(col->mx);
      col->peers.emplace_back(conn, name);
      col->cv.notify_all();
    },
    [=](release_atom) {
      std::vector<caf::response_promise> rps;
      {
        std::lock_guard<std::mutex> lk(col->mx);
        rps.swap(col->held);
      }
      for (auto& rp : rps) rp.deliver(caf::unit);
    },
  };
}

struct node {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::vector<caf::actor> actors;
  node() {
    cfg.load<caf::io::middleman>();
    add_transport_message_types(cfg);
    cfg.set("logger.file-verbosity", caf::atom("quiet"));
    cfg.set("logger.console-verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
  }
  ~node() {
    for (auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sys.reset();
  }
  caf::actor sink(std::shared_ptr<collector> col, bool hold = false) {
    auto a = sys->spawn(sink_fun, std::move(col), hold);
    actors.push_back(a);
    return a;
  }
  // The channels below stop with the node; a test asserts they opened.
  caf::expected<bulk_listener> listen(caf::actor to, bulk_options opts = {}) {
    auto lst = spawn_bulk_listener(*sys, 0, std::move(to), std::move(opts));
    if (lst) actors.push_back(lst->channel);
    return lst;
  }
  caf::expected<caf::actor> connect(uint16_t port, caf::actor to, bulk_options opts = {}) {
    auto ch = connect_bulk(*sys, "127.0.0.1", port, std::move(to), std::move(opts));
    if (ch) actors.push_back(*ch);
    return ch;
  }
  // A client whose incoming frames nobody looks at.
  caf::expected<caf::actor> connect(uint16_t port, bulk_options opts = {}) {
    return connect(port, sink(std::make_shared<collector>()), std::move(opts));
  }
};

inline std::vector<char> pattern(size_t n, uint32_t seed) {
  std::vector<char> v(n);
  std::mt19937 rng(seed);
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

// Sends one frame through a channel and waits for the buffer to come back.
inline caf::error send_frame(caf::actor_system& sys, const caf::actor& ch, uint16_t kind, uint64_t tag,
                             std::vector<char> payload, uint64_t conn = 0) {
  caf::scoped_actor self{sys};
  caf::error result;
  auto ok = [&](std::vector<char>&) {};
  auto bad = [&](caf::error& e) { result = e; };
  if (conn == 0)
    self->request(ch, 10s, bulk_send_atom::value, kind, tag, std::move(payload)).receive(ok, bad);
  else
    self->request(ch, 10s, bulk_send_atom::value, conn, kind, tag, std::move(payload)).receive(ok, bad);
  return result;
}

using cleave::testing::raw_client;

// A raw client says hello like a bulk channel would.
inline void send_hello(raw_client& c, uint64_t window = uint64_t{1} << 30) {
  auto h = encode_header(frame_header{kind_hello, hello_payload_size, 0});
  auto p = encode_hello(hello{window, default_max_payload});
  c.write_all(h.data(), h.size());
  c.write_all(p.data(), p.size());
}

inline long max_rss_kib() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

}  // namespace cleave::testing
