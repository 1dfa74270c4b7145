#include "actors/relay/relay_actor.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "schema/messages.hpp"
#include "schema/tile_codec.hpp"
#include "training/process_memory.hpp"

namespace cleave {

using namespace transport;

namespace {

using relay_ptr = caf::stateful_actor<relay_state>*;
using upstream_atom = caf::atom_constant<caf::atom("rly_up")>;
using report_atom = caf::atom_constant<caf::atom("rly_rep")>;
using credit_promise = caf::typed_response_promise<std::vector<char>>;

constexpr auto sweep_interval = std::chrono::milliseconds(500);
// Frames a device may send before its connection to the ps is up: its
// join and a few heartbeats.
constexpr size_t max_waiting_frames = 16;

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

void forget_seat(relay_ptr self, uint64_t conn) {
  auto& st = self->state;
  auto it = st.seats.find(conn);
  if (it == st.seats.end()) return;
  if (it->second.upstream) {
    st.seat_of_upstream.erase(it->second.upstream.address());
    self->send_exit(it->second.upstream, caf::exit_reason::user_shutdown);
  }
  st.books.drop(conn);
  st.seats.erase(it);
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

// A frame of the device on `conn` to the ps, through its own connection.
void send_up(relay_ptr self, relay_seat_state& seat, uint16_t kind, uint64_t tag, std::vector<char> payload,
             credit_promise done = {}) {
  self->state.traffic.to_ps += payload.size();
  self->request(seat.upstream, caf::infinite, bulk_send_atom::value, kind, tag, std::move(payload))
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

// The device's join, as the ps is to see it: the relay's name and store.
caf::expected<std::vector<char>> relayed_join(relay_ptr self, uint64_t conn, const bulk_frame& f) {
  auto join = decode_join(f.payload.data(), f.payload.size());
  if (!join) return join.error();
  if (!join->relay.empty()) return fail("a device may not name a relay");
  if (auto err = validate(join->profile)) return err;
  join->relay = self->state.opts.seat;
  self->state.books.admit(conn, default_cache_bytes(join->profile.memory_bytes));
  return encode(*join);
}

// Dials the ps for the device on `conn`, off the relay's thread (the TCP
// connect blocks); the relay hears back (upstream_atom, conn, channel).
void dial_ps(relay_ptr self, uint64_t conn) {
  auto relay = caf::actor{self};
  auto opts = self->state.opts;
  self->home_system().spawn<caf::detached>([=](caf::blocking_actor* dialer) {
    auto ch = connect_bulk(dialer->home_system(), opts.ps_host, opts.ps_port, relay, opts.upstream);
    if (ch)
      dialer->send(relay, upstream_atom::value, conn, *ch, std::string{});
    else
      dialer->send(relay, upstream_atom::value, conn, caf::actor{}, describe(ch.error()));
  });
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
    if (seat.joined) {
      close_device(self, f.conn, "a second join");
      return std::move(f.payload);
    }
    auto join = relayed_join(self, f.conn, f);
    if (!join) {
      // Closed once the refusal is in the socket's buffer, as the ps's edge does.
      const auto why = describe(join.error());
      const uint64_t conn = f.conn;
      self->request(st.listener, caf::infinite, bulk_send_atom::value, conn, static_cast<uint16_t>(edge_refused),
                    uint64_t{0}, encode_refusal(why))
        .then([=](std::vector<char>&) { close_device(self, conn, why); },
              [=](caf::error&) { close_device(self, conn, why); });
      return std::move(f.payload);
    }
    seat.joined = true;
    seat.waiting.push_back({edge_join, f.tag, std::move(*join)});
    dial_ps(self, f.conn);
    return std::vector<char>{};
  }
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
  if (!seat.upstream) {
    // Nothing but its join has gone up yet, so the ps has welcomed nobody:
    // a device has no answer to send, and its heartbeats can wait (a few).
    if (f.kind != edge_heartbeat) {
      close_device(self, f.conn, std::string("a ") + to_string(static_cast<edge_kind>(f.kind)) +
                                   " frame before the ps welcomed it");
      return std::move(f.payload);
    }
    if (seat.waiting.size() < max_waiting_frames) seat.waiting.push_back({f.kind, f.tag, std::move(f.payload)});
    return std::vector<char>{};
  }
  auto done = self->make_response_promise<std::vector<char>>();
  send_up(self, seat, f.kind, f.tag, std::move(f.payload), done);
  return done;
}

// A frame from the ps to the device on `conn`.
caf::result<std::vector<char>> from_ps(relay_ptr self, uint64_t conn, bulk_frame& f) {
  auto& st = self->state;
  st.traffic.from_ps += f.payload.size();
  if (f.kind == edge_task) {
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
  if (f.kind == edge_welcome) ++st.traffic.devices_joined;
  auto done = self->make_response_promise<std::vector<char>>();
  send_down(self, conn, f.kind, f.tag, std::move(f.payload), done);
  return done;
}

void sweep(relay_ptr self) {
  auto& st = self->state;
  const auto now = caf::make_timestamp();
  std::vector<std::pair<uint64_t, std::string>> late;
  for (const auto& [conn, seat] : st.seats) {
    if (!seat.joined && now - seat.opened > st.opts.handshake_timeout)
      late.emplace_back(conn, "no join in time");
    else if (seat.joined && now - seat.last_frame > st.opts.idle_timeout)
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
    },
    [=](bulk_opened_atom, caf::actor channel, uint64_t conn, const std::string& peer) {
      auto& st = self->state;
      if (channel != st.listener) return;  // a connection to the ps, known from its dial
      const auto now = caf::make_timestamp();
      relay_seat_state seat;
      seat.peer = peer;
      seat.opened = seat.last_frame = now;
      seat.limiter = rate_limiter(st.opts.rate, seconds_of(now));
      st.seats.insert_or_assign(conn, std::move(seat));
    },
    [=](bulk_peer_atom, uint64_t, const std::string& name) {
      spdlog::debug("relay: a peer presented the certificate '{}'", name);
    },
    [=](upstream_atom, uint64_t conn, caf::actor channel, const std::string& why) {
      auto& st = self->state;
      auto it = st.seats.find(conn);
      if (!channel) {
        if (it != st.seats.end()) close_device(self, conn, "cannot reach the ps: " + why);
        return;
      }
      if (it == st.seats.end()) {  // the device left while the relay dialled
        self->send_exit(channel, caf::exit_reason::user_shutdown);
        return;
      }
      auto& seat = it->second;
      seat.upstream = channel;
      st.seat_of_upstream[channel.address()] = conn;
      for (auto& w : seat.waiting) send_up(self, seat, w.kind, w.tag, std::move(w.payload));
      seat.waiting.clear();
    },
    [=](bulk_frame_atom, bulk_frame& f) -> caf::result<std::vector<char>> {
      auto& st = self->state;
      const auto from = self->current_sender();
      if (from == st.listener.address()) return from_device(self, f);
      auto up = st.seat_of_upstream.find(caf::actor_cast<caf::actor_addr>(from));
      if (up == st.seat_of_upstream.end()) return std::move(f.payload);  // a device gone meanwhile
      return from_ps(self, up->second, f);
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      auto& st = self->state;
      const auto from = self->current_sender();
      if (from == st.listener.address()) {
        spdlog::debug("relay: device connection {} closed: {}", conn, reason);
        forget_seat(self, conn);
        return;
      }
      auto up = st.seat_of_upstream.find(caf::actor_cast<caf::actor_addr>(from));
      if (up == st.seat_of_upstream.end()) return;
      const uint64_t device = up->second;
      st.seat_of_upstream.erase(up);
      spdlog::info("relay: the ps closed device connection {}'s link: {}", device, reason);
      self->send(st.listener, bulk_closed_atom::value, device);
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
