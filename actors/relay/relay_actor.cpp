#include "actors/relay/relay_actor.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "schema/edge_codec.hpp"
#include "schema/edge_relay_codec.hpp"
#include "schema/errors.hpp"
#include "schema/messages.hpp"
#include "schema/tile_codec.hpp"
#include "training/process_memory.hpp"

namespace cleave {

using namespace transport;

namespace {

using relay_ptr = caf::stateful_actor<relay_state>*;
using upstream_atom = caf::atom_constant<caf::atom("rly_up")>;
using dial_atom = caf::atom_constant<caf::atom("rly_dial")>;
using keepalive_atom = caf::atom_constant<caf::atom("rly_keep")>;
using report_atom = caf::atom_constant<caf::atom("rly_rep")>;
using credit_promise = caf::typed_response_promise<std::vector<char>>;

constexpr auto sweep_interval = std::chrono::milliseconds(500);

double seconds_of(caf::timestamp t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// Closes a device's connection; its seat goes when the listener says it closed.
void close_device(relay_ptr self, uint64_t conn, const std::string& why) {
  auto& st = self->state;
  auto it = st.seats.find(conn);
  if (it == st.seats.end()) return;
  spdlog::warn("relay: dropping device connection {} ({}): {}", conn, it->second.peer, why);
  ++st.traffic.devices_dropped;
  self->send(st.listener, bulk_closed_atom::value, conn);
}

// A frame to the device on `conn`; `done` (if any) is answered when it is in
// the socket's buffer, so the sender's credit follows the device's pace.
template <class Payload>
void send_down(relay_ptr self, uint64_t conn, uint16_t kind, uint64_t tag, Payload payload,
               credit_promise done = {}) {
  auto& st = self->state;
  st.traffic.to_devices += payload.size();
  self->request(st.listener, caf::infinite, bulk_send_atom::value, conn, kind, tag, std::move(payload))
    .then([=](Payload&) mutable { if (done.pending()) done.deliver(std::vector<char>{}); },
          [=](caf::error& err) mutable {
            spdlog::debug("relay: a frame to device connection {} failed: {}", conn, describe(err));
            if (done.pending()) done.deliver(std::vector<char>{});
          });
}

// Refuses a device's join with the reason, and closes its connection once
// the refusal is in the socket's buffer, as the ps's edge does.
void refuse_device(relay_ptr self, uint64_t conn, const std::string& why) {
  self->request(self->state.listener, caf::infinite, bulk_send_atom::value, conn, static_cast<uint16_t>(edge_refused),
                uint64_t{0}, encode_refusal(why))
    .then([=](std::vector<char>&) { close_device(self, conn, why); },
          [=](caf::error&) { close_device(self, conn, why); });
}

// A frame of the device in `session` to the ps, routed on the relay's connection.
void send_up(relay_ptr self, uint32_t session, uint16_t kind, uint64_t tag, std::vector<char> payload,
             credit_promise done = {}, uint16_t flags = 0) {
  auto& st = self->state;
  if (!st.upstream) {
    if (done.pending()) done.deliver(std::vector<char>{});
    return;
  }
  append_route(payload, {session, kind, tag, flags});
  st.traffic.to_ps += payload.size();
  self->request(st.upstream, caf::infinite, bulk_send_atom::value, static_cast<uint16_t>(edge_routed), uint64_t{0},
                std::move(payload))
    .then([=](std::vector<char>& back) mutable { if (done.pending()) done.deliver(std::move(back)); },
          [=](caf::error& err) mutable {
            spdlog::debug("relay: a frame to the ps failed: {}", describe(err));
            if (done.pending()) done.deliver(std::vector<char>{});
          });
}

void send_task_down(relay_ptr self, uint64_t conn, const tile_task& task, credit_promise done = {}) {
  bulk_buffer buf(encoded_size(task));
  encode(task, buf.payload());
  send_down(self, conn, edge_task, 0, std::move(buf), std::move(done));
}

// Dials the ps off the relay's thread (the TCP connect blocks); the relay
// hears back (upstream_atom, channel, why).
void dial_ps(relay_ptr self) {
  auto relay = caf::actor{self};
  auto opts = self->state.opts;
  self->home_system().spawn<caf::detached>([=](caf::blocking_actor* dialer) {
    auto ch = connect_bulk(dialer->home_system(), opts.ps_host, opts.ps_port, relay, opts.upstream);
    if (ch)
      dialer->send(relay, upstream_atom::value, *ch, std::string{});
    else
      dialer->send(relay, upstream_atom::value, caf::actor{}, describe(ch.error()));
  });
}

// The ps is gone: so are the sessions of the relay's devices, whose
// connections close (each tries its next address), and the relay dials again.
void lose_ps(relay_ptr self, const std::string& why) {
  auto& st = self->state;
  spdlog::warn("relay '{}': lost the ps ({}); closing its {} devices' connections and dialling again",
               st.opts.seat.name, why, st.seats.size());
  if (st.upstream) self->send_exit(st.upstream, caf::exit_reason::user_shutdown);
  st.upstream = nullptr;
  for (const auto& [conn, seat] : st.seats) close_device(self, conn, "the relay lost the ps");
  self->delayed_send(self, st.opts.redial, dial_atom::value);
}

// A device's join: it goes up as its session's first frame.
void join_up(relay_ptr self, uint64_t conn, relay_seat_state& seat, bulk_frame& f) {
  auto& st = self->state;
  if (seat.session != 0) return close_device(self, conn, "a second join");
  if (!st.upstream) return refuse_device(self, conn, "the relay has no connection to the ps now; try again later");
  auto join = decode_join(f.payload.data(), f.payload.size());
  if (!join) return refuse_device(self, conn, describe(join.error()));
  if (auto err = validate(join->profile)) return refuse_device(self, conn, describe(err));
  // Under TLS a device without a certificate got this far only if the relay
  // takes join tokens; its join must carry one, and the ps redeems it.
  const bool uncertified = st.opts.tls && !seat.certified;
  if (uncertified && join->token.empty())
    return refuse_device(self, conn, "this relay admits a device by a certificate the job's CA signed or by a "
                                     "one-time join token; it presented neither");
  do
    ++st.last_session;
  while (st.last_session == 0 || st.conn_of_session.count(st.last_session) != 0);
  seat.session = st.last_session;
  st.conn_of_session[seat.session] = conn;
  st.books.admit(conn, default_cache_bytes(join->profile.memory_bytes));
  send_up(self, seat.session, edge_join, f.tag, std::move(f.payload), {}, uncertified ? route_uncertified : 0);
}

// A frame from a device.
caf::result<std::vector<char>> from_device(relay_ptr self, bulk_frame& f) {
  auto& st = self->state;
  auto it = st.seats.find(f.conn);
  if (it == st.seats.end()) return std::move(f.payload);  // closed meanwhile
  auto& seat = it->second;
  seat.last_frame = caf::make_timestamp();
  st.traffic.from_devices += f.payload.size();
  if (f.kind == edge_join) {
    join_up(self, f.conn, seat, f);
    return std::vector<char>{};
  }
  if (seat.session == 0) return std::move(f.payload);  // refused, closing
  switch (f.kind) {
    case edge_heartbeat:
    case edge_leave: {
      const auto verdict = seat.limiter.admit(seconds_of(seat.last_frame)).verdict;
      if (verdict == rate_verdict::drop) {
        close_device(self, f.conn, "far past its rate of frames");
        return std::move(f.payload);
      }
      break;
    }
    case edge_result: {
      auto res = decode_result(f.payload.data(), f.payload.size());
      if (!res) {
        close_device(self, f.conn, "a malformed result: " + describe(res.error()));
        return std::move(f.payload);
      }
      st.books.answered(f.conn, res->key);
      break;
    }
    case edge_miss: {
      auto miss = decode_miss(f.payload.data(), f.payload.size());
      if (!miss) {
        close_device(self, f.conn, "a malformed miss: " + describe(miss.error()));
        return std::move(f.payload);
      }
      if (auto again = st.books.answer_miss(f.conn, *miss)) {
        auto done = self->make_response_promise<std::vector<char>>();
        send_task_down(self, f.conn, *again, done);
        return done;
      }
      break;
    }
    case edge_ml_scores:
    case edge_ml_hidden_grad:
    case edge_ml_done:
    case edge_ml_state:
    case edge_ml_error: break;
    default:
      close_device(self, f.conn, std::string("a frame a device does not send: ") + to_string(static_cast<edge_kind>(f.kind)));
      return std::move(f.payload);
  }
  auto done = self->make_response_promise<std::vector<char>>();
  send_up(self, seat.session, f.kind, f.tag, std::move(f.payload), done);
  return done;
}

// The reason a refusal or a closed session's frame gives, or why it gives none.
std::string reason_in(const bulk_frame& f) {
  auto why = decode_refusal(f.payload.data(), f.payload.size());
  return why ? *why : describe(why.error());
}

// A routed frame from the ps to one of the relay's devices.
caf::result<std::vector<char>> from_ps(relay_ptr self, bulk_frame& f) {
  auto& st = self->state;
  st.traffic.from_ps += f.payload.size();
  if (f.kind == edge_refused) {
    const auto reason = reason_in(f);
    spdlog::error("relay '{}': the ps refused it: {}", st.opts.seat.name, reason);
    self->quit(fail("the ps refused this relay: " + reason));
    return std::move(f.payload);
  }
  if (f.kind != edge_routed) {
    spdlog::warn("relay: the ps sent a {} frame outside any session", to_string(static_cast<edge_kind>(f.kind)));
    return std::move(f.payload);
  }
  auto route = take_route(f.payload, st.opts.max_tile_bytes);
  if (!route) {
    spdlog::warn("relay: a frame from the ps: {}", describe(route.error()));
    return std::move(f.payload);
  }
  auto session = st.conn_of_session.find(route->session);
  if (session == st.conn_of_session.end()) return std::move(f.payload);  // the device left meanwhile
  const uint64_t conn = session->second;
  switch (route->kind) {
    case edge_closed: {
      close_device(self, conn, "the ps closed its session: " + reason_in(f));
      return std::move(f.payload);
    }
    case edge_task: {
      auto task = decode_task(f.payload.data(), f.payload.size());
      if (!task) {
        spdlog::warn("relay: a task frame from the ps is malformed: {}", describe(task.error()));
        return std::move(f.payload);
      }
      auto ready = st.books.pass_down(conn, std::move(*task), seconds_of(caf::make_timestamp()));
      for (auto& [device, released] : st.books.released()) send_task_down(self, device, released);
      if (!ready) return std::move(f.payload);  // parked until its block comes
      auto done = self->make_response_promise<std::vector<char>>();
      send_task_down(self, conn, *ready, done);
      return done;
    }
    case edge_welcome: ++st.traffic.devices_joined; break;
    default: break;
  }
  auto done = self->make_response_promise<std::vector<char>>();
  send_down(self, conn, route->kind, route->tag, std::move(f.payload), done);
  return done;
}

void sweep(relay_ptr self) {
  auto& st = self->state;
  const auto now = caf::make_timestamp();
  std::vector<std::pair<uint64_t, std::string>> late;
  for (const auto& [conn, seat] : st.seats) {
    if (seat.session == 0 && now - seat.opened > st.opts.handshake_timeout)
      late.emplace_back(conn, "no join in time");
    else if (seat.session != 0 && now - seat.last_frame > st.opts.idle_timeout)
      late.emplace_back(conn, "silent for too long");
  }
  for (const auto& [conn, why] : late) close_device(self, conn, why);
  for (auto& [device, task] : st.books.expire(seconds_of(now), st.opts.park_seconds)) send_task_down(self, device, task);
  self->delayed_send(self, sweep_interval, tick_atom::value);
}

void report(relay_ptr self) {
  auto& st = self->state;
  spdlog::info("relay {}: {}", st.opts.seat.name, describe(st.books.counters(), st.traffic, st.seats.size()));
}

}  // namespace

std::string describe(const relay_counters& c, const relay_traffic& t, size_t devices) {
  constexpr double mb = 1e6;
  return fmt::format(
    "{} devices ({} joined, {} dropped); from the ps {:.1f} MB, to devices {:.1f} MB, from devices {:.1f} MB, "
    "to the ps {:.1f} MB; store: {} blocks in ({:.1f} MB), {} served ({:.1f} MB), {} named, misses {} answered "
    "and {} sent up, hit rate {:.3f}; {} tasks waited for their blocks, {} in vain; peak RSS {:.0f} MiB",
    devices, t.devices_joined, t.devices_dropped, t.from_ps / mb, t.to_devices / mb, t.from_devices / mb,
    t.to_ps / mb, c.blocks_in, c.bytes_in / mb, c.blocks_served, c.bytes_served / mb, c.blocks_named,
    c.misses_answered, c.misses_up, c.hit_rate(), c.tasks_parked, c.tasks_expired,
    static_cast<double>(peak_rss_bytes()) / (1 << 20));
}

caf::behavior relay_actor(relay_ptr self, relay_options opts) {
  self->state.opts = std::move(opts);
  self->state.books = relay_books(self->state.opts.seat.store_bytes);
  self->delayed_send(self, sweep_interval, tick_atom::value);
  self->delayed_send(self, self->state.opts.keepalive, keepalive_atom::value);
  if (self->state.opts.report_seconds > 0)
    self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(
                               std::chrono::duration<double>(self->state.opts.report_seconds)),
                       report_atom::value);
  self->set_exit_handler([=](const caf::exit_msg& msg) {
    report(self);
    self->quit(msg.reason);
  });
  return {
    [=](relay_named_atom, const std::string& name) { self->state.opts.seat.name = name; },
    [=](relay_listener_atom, caf::actor listener) {
      self->state.listener = std::move(listener);
      self->link_to(self->state.listener);
      dial_ps(self);
    },
    [=](dial_atom) {
      if (!self->state.upstream) dial_ps(self);
    },
    [=](upstream_atom, caf::actor channel, const std::string& why) {
      auto& st = self->state;
      if (!channel) {
        // Said once, then every 60 tries: a relay outlives its ps's runs.
        if (st.failed_dials++ % 60 == 0)
          spdlog::warn("relay '{}': cannot reach the ps ({} tries so far): {}", st.opts.seat.name, st.failed_dials, why);
        self->delayed_send(self, st.opts.redial, dial_atom::value);
        return;
      }
      st.failed_dials = 0;
      st.upstream = channel;
      self->request(channel, caf::infinite, bulk_send_atom::value, static_cast<uint16_t>(edge_relay_hello), uint64_t{0},
                    encode(edge_relay_hello_msg{message_schema_version, st.opts.seat}))
        .then([](std::vector<char>&) {}, [](caf::error&) {});
      spdlog::info("relay '{}': connected to the ps at {}:{}", st.opts.seat.name, st.opts.ps_host, st.opts.ps_port);
    },
    [=](bulk_opened_atom, caf::actor channel, uint64_t conn, const std::string& peer) {
      auto& st = self->state;
      if (channel != st.listener) return;  // the connection to the ps, known from its dial
      const auto now = caf::make_timestamp();
      relay_seat_state seat;
      seat.peer = peer;
      seat.opened = seat.last_frame = now;
      seat.limiter = rate_limiter(st.opts.rate, seconds_of(now));
      st.seats.insert_or_assign(conn, std::move(seat));
    },
    [=](bulk_peer_atom, uint64_t conn, const std::string& name, bool) {
      spdlog::debug("relay: a peer presented the certificate '{}'", name);
      if (auto it = self->state.seats.find(conn); it != self->state.seats.end()) it->second.certified = !name.empty();
    },
    [=](bulk_frame_atom, bulk_frame& f) -> caf::result<std::vector<char>> {
      auto& st = self->state;
      const auto from = self->current_sender();
      if (from == st.listener.address()) return from_device(self, f);
      if (!st.upstream || from != st.upstream.address()) return std::move(f.payload);  // a connection since lost
      return from_ps(self, f);
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      auto& st = self->state;
      const auto from = self->current_sender();
      if (from == st.listener.address()) {
        spdlog::debug("relay: device connection {} closed: {}", conn, reason);
        auto it = st.seats.find(conn);
        if (it == st.seats.end()) return;
        if (const uint32_t session = it->second.session; session != 0) {
          send_up(self, session, edge_leave, 0, {});
          st.conn_of_session.erase(session);
        }
        st.books.drop(conn);
        st.seats.erase(it);
        return;
      }
      if (st.upstream && from == st.upstream.address()) lose_ps(self, reason);
    },
    [=](keepalive_atom) {
      auto& st = self->state;
      if (st.upstream)
        self->request(st.upstream, caf::infinite, bulk_send_atom::value, static_cast<uint16_t>(edge_heartbeat),
                      uint64_t{0}, std::vector<char>{})
          .then([](std::vector<char>&) {}, [](caf::error&) {});
      self->delayed_send(self, st.opts.keepalive, keepalive_atom::value);
    },
    [=](tick_atom) { sweep(self); },
    [=](report_atom) {
      report(self);
      self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(
                                 std::chrono::duration<double>(self->state.opts.report_seconds)),
                         report_atom::value);
    },
  };
}

}  // namespace cleave
