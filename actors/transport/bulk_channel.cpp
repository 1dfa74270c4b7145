// The bulk channel's broker: the frame read state machine (header, hello,
// payload read directly or in chunks, delivery to the sink and the credit its
// replies return), the pool of read buffers, admission at the connection cap
// and the broker's behavior. A connection's record, its send queue and its
// removal are in bulk_connection.cpp; frame encoding and checks in frame.cpp;
// how bytes meet the socket (plaintext or TLS) in bulk_io.cpp.
#include "actors/transport/bulk_channel.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/transport/bulk_connection.hpp"
#include "actors/transport/bulk_io.hpp"
#include "actors/transport/tcp_connect.hpp"
#include "schema/errors.hpp"

namespace cleave::transport {

namespace {

using bulk_tick_atom = caf::atom_constant<caf::atom("bulk_tick")>;

using detail::bulk_broker;
using detail::close_how;
using detail::clock_type;
using detail::connection;
using detail::drop;
using detail::enqueue_send;
using detail::find_conn;
using detail::native_fd;
using detail::pump;
using detail::read_state;
using detail::send_bytes;
using detail::write_frame_header;

void tune_socket(caf::io::connection_handle hdl, const bulk_options& opts) {
  if (opts.socket_buffer_bytes <= 0) return;
  auto fd = native_fd(hdl);
  int v = opts.socket_buffer_bytes;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

void expect_header(connection& c) {
  c.rd = read_state::header;
  c.io.expect(frame_header_size);
}

void recycle(bulk_broker* self, std::vector<char>&& buf) {
  auto& st = self->state;
  if (buf.capacity() == 0 || buf.capacity() > st.opts.chunk_bytes) return;
  if (st.pool_bytes + buf.capacity() > st.opts.pool_bytes) return;
  buf.resize(buf.capacity());  // zero-fills only the tail, once
  st.pool_bytes += buf.size();
  st.pool.push_back(std::move(buf));
}

void on_consumed(bulk_broker* self, uint64_t id, uint64_t len) {
  auto c = find_conn(self, id);
  if (!c) return;
  if (c->at_sink > 0) --c->at_sink;
  c->rw.consumed(len);
  // Unsent bytes beyond what the peer's window admits (plus slack for credit
  // frames) mean the peer stopped reading: do not buffer for it forever.
  if (c->io.pending().size() > c->sw.window() + c->peer_max_payload + (uint64_t{1} << 20))
    return drop(self, *c, "peer stopped reading: unsent bytes exceed its window", true);
  if (auto credit = c->rw.take_credit(c->at_sink == 0, self->state.opts.lazy_credit_bytes)) {
    write_frame_header(*c, frame_header{kind_credit, 0, credit});
    c->io.flush();
  }
}

void deliver(bulk_broker* self, connection& c, uint16_t kind, uint64_t tag,
             std::vector<char>&& payload) {
  auto id = c.id;
  uint64_t len = payload.size();
  ++c.at_sink;
  bulk_frame f{kind, tag, id, std::move(payload),
               std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count()};
  auto h = self->request(self->state.sink, caf::infinite, bulk_frame_atom::value, std::move(f));
  self->add_multiplexed_response_handler(
    h.id(), caf::behavior{[=]() { on_consumed(self, id, len); },
                          [=](std::vector<char>& buf) {
                            recycle(self, std::move(buf));
                            on_consumed(self, id, len);
                          },
                          [=](caf::error&) { on_consumed(self, id, len); }});
}

// Puts the best-fitting pooled buffer (at least len bytes, at most twice
// that) in place of the read buffer, so the coming exactly(len) read shrinks
// it instead of allocating and zero-filling a fresh one.
void offer_pooled_buffer(bulk_broker* self, std::vector<char>& rd_buf, uint64_t len) {
  auto& pool = self->state.pool;
  size_t best = pool.size();
  for (size_t i = 0; i < pool.size(); ++i)
    if (pool[i].size() >= len && pool[i].size() <= 2 * len &&
        (best == pool.size() || pool[i].size() < pool[best].size()))
      best = i;
  if (best == pool.size()) return;
  self->state.pool_bytes -= pool[best].size();
  rd_buf.swap(pool[best]);
  if (best + 1 != pool.size()) pool[best] = std::move(pool.back());
  pool.pop_back();
}

void on_header(bulk_broker* self, connection& c, std::vector<char>& buf) {
  auto& opts = self->state.opts;
  auto h = decode_header(buf.data(), buf.size(), opts.max_payload);
  if (!h) return drop(self, c, "malformed frame header: " + describe(h.error()), true);
  if (h->kind >= first_reserved_kind) {
    switch (h->kind) {
      case kind_hello:
        if (c.hello_received) return drop(self, c, "second hello", true);
        if (h->length != hello_payload_size)
          return drop(self, c, "hello with a " + std::to_string(h->length) + "-byte payload", true);
        c.rd = read_state::hello;
        c.io.expect(hello_payload_size);
        return;
      case kind_credit:
        if (!c.hello_received) return drop(self, c, "credit before hello", true);
        if (h->length != 0) return drop(self, c, "credit frame with a payload", true);
        if (auto err = c.sw.credit(h->tag)) return drop(self, c, describe(err), true);
        return pump(self, c);
      default:
        return drop(self, c, "unknown control frame kind " + std::to_string(h->kind), true);
    }
  }
  if (!c.hello_received) return drop(self, c, "data frame before hello", true);
  if (const auto& first = opts.first_data_kinds;
      !first.empty() && !c.data_seen && std::find(first.begin(), first.end(), h->kind) == first.end()) {
    std::string kinds;
    for (auto k : first) kinds += (kinds.empty() ? "" : " or ") + std::to_string(k);
    return drop(self, c, "the first frame must be of kind " + kinds + ", not " + std::to_string(h->kind), true);
  }
  c.data_seen = true;
  if (opts.max_payload_for_kind) {
    auto cap = std::min(opts.max_payload, opts.max_payload_for_kind(h->kind));
    if (h->length > cap)
      return drop(self, c,
                  "frame of kind " + std::to_string(h->kind) + " claims " +
                    std::to_string(h->length) + " bytes, over kind " + std::to_string(h->kind) +
                    "'s cap of " + std::to_string(cap) + " bytes",
                  true);
  }
  if (auto err = c.rw.admit(h->length)) return drop(self, c, describe(err), true);
  if (h->length == 0) return deliver(self, c, h->kind, h->tag, {});
  c.pending = *h;
  if (h->length <= opts.chunk_bytes) {
    c.rd = read_state::payload_direct;
    offer_pooled_buffer(self, buf, h->length);
    c.io.expect(h->length);
  } else {
    c.rd = read_state::payload_chunked;
    c.remaining = h->length;
    c.assembling.clear();
    c.assembling.reserve(h->length);  // address space only until bytes arrive
    c.io.expect(opts.chunk_bytes);
  }
}

// One unit the state machine asked for (header, hello, payload, chunk) is in
// `buf`: CAF's read buffer, or the TLS path's unit buffer.
void on_unit(bulk_broker* self, connection* c, std::vector<char>& buf) {
  auto& st = self->state;
  c->last_progress = clock_type::now();
  switch (c->rd) {
    case read_state::header:
      return on_header(self, *c, buf);
    case read_state::hello: {
      auto h = decode_hello(buf.data(), buf.size());
      if (!h) return drop(self, *c, "malformed hello: " + describe(h.error()), true);
      c->hello_received = true;
      c->peer_max_payload = h->max_payload;
      c->sw.open(h->receive_window);
      expect_header(*c);
      return pump(self, *c);
    }
    case read_state::payload_direct: {
      std::vector<char> payload;
      payload.swap(buf);  // zero-copy: the read buffer becomes the frame
      expect_header(*c);
      return deliver(self, *c, c->pending.kind, c->pending.tag, std::move(payload));
    }
    case read_state::payload_chunked: {
      c->assembling.insert(c->assembling.end(), buf.begin(), buf.end());
      c->remaining -= buf.size();
      if (c->remaining > 0) {
        auto next = std::min<uint64_t>(c->remaining, st.opts.chunk_bytes);
        c->io.expect(next);
        return;
      }
      expect_header(*c);
      // The chunk-sized read buffer is CAF's and would stay at its capacity
      // on an idle connection: give it back, so an idle connection holds a
      // header's bytes whatever it once received.
      std::vector<char>().swap(buf);
      return deliver(self, *c, c->pending.kind, c->pending.tag, std::move(c->assembling));
    }
  }
}

void announce(bulk_broker* self, connection& c) {
  auto& st = self->state;
  self->send(st.sink, bulk_opened_atom::value, caf::actor_cast<caf::actor>(self), c.id, c.peer);
  if (c.io.is_tls()) {
    // Announced from the handshake's result: nothing is on the pool before it.
    const auto& session = c.io.tls()->pipe.session();
    auto name = session.peer_name();
    spdlog::debug("bulk channel: connection {} ({}): TLS peer '{}'", c.id, c.peer, name);
    self->send(st.sink, bulk_peer_atom::value, c.id, std::move(name), session.peer_may_serve());
  }
}

// What the TLS path reports, for connection `id`; `c` follows it (null once
// the connection is gone).
detail::tls_events tls_events_for(bulk_broker* self, uint64_t id, connection*& c) {
  detail::tls_events ev;
  ev.on_open = [self, id, &c] {
    c->last_progress = clock_type::now();
    announce(self, *c);
    return true;
  };
  ev.on_unit = [self, id, &c](std::vector<char>& unit) {
    on_unit(self, c, unit);
    return (c = find_conn(self, id)) != nullptr;
  };
  ev.on_sealed = [self, id, &c](detail::payload_buffer&& body) {
    detail::sealed(self, *c, std::move(body));
    return (c = find_conn(self, id)) != nullptr;
  };
  return ev;
}

// A TLS error: before the handshake the peer gets the alert saying why (a
// few bytes, so the graceful close cannot hang on a peer that does not
// read); after it, a broken session is a hostile peer like any other: abort.
void tls_failed(bulk_broker* self, uint64_t id, const caf::error& err) {
  if (auto c = find_conn(self, id))
    drop(self, *c, describe(err), true, false, c->io.handshake_done() ? close_how::abort : close_how::tls_alert);
}

void on_data(bulk_broker* self, caf::io::new_data_msg& msg) {
  auto& st = self->state;
  auto i = st.by_hdl.find(msg.handle.id());
  if (i == st.by_hdl.end()) return;
  auto id = i->second;
  auto c = find_conn(self, id);
  if (!c) return;
  if (!c->io.is_tls()) return on_unit(self, c, msg.buf);
  if (auto err = c->io.receive(msg.buf, tls_events_for(self, id, c))) tls_failed(self, id, err);
}

// Work posted to the crypto pool for connection `id` has finished.
void on_tls_done(bulk_broker* self, uint64_t id) {
  auto c = find_conn(self, id);
  if (!c || !c->io.is_tls()) return;  // closed meanwhile: the result went with it
  if (auto err = c->io.on_tls_done(tls_events_for(self, id, c))) tls_failed(self, id, err);
}

// Registers a fresh connection, sends our hello, starts reading headers.
// With TLS the hello waits in the session for the handshake, and the sink
// hears of the connection only once the peer's certificate is verified.
void start_connection(bulk_broker* self, caf::io::connection_handle hdl,
                      const std::string& peer_host = {}) {
  auto& st = self->state;
  auto id = st.next_id++;
  auto [it, inserted] = st.conns.emplace(id, connection{st.opts.receive_window});
  auto& c = it->second;
  c.id = id;
  c.hdl = hdl;
  c.peer = self->remote_addr(hdl) + ":" + std::to_string(self->remote_port(hdl));
  c.last_progress = clock_type::now();
  st.by_hdl.emplace(hdl.id(), id);
  tune_socket(hdl, st.opts);
  self->ack_writes(hdl, true);  // completion events drive zero-copy sends
  std::unique_ptr<detail::tls_link> tls;
  if (st.opts.tls) {
    // Called on a pool thread: a weak handle, so a job finishing after the
    // broker is gone sends nothing.
    auto notify = [addr = self->address(), id] {
      if (auto me = caf::actor_cast<caf::actor>(addr)) caf::anon_send(me, detail::tls_done_atom::value, id);
    };
    // Ciphertext a verified peer may have in flight: its window, record and
    // header overhead, and a few reads.
    auto cap = st.opts.receive_window + st.opts.receive_window / 16 + 4 * st.opts.tls_read_bytes;
    tls = std::make_unique<detail::tls_link>(st.opts.tls, peer_host, st.opts.tls_read_bytes, cap, st.crypto,
                                             std::move(notify));
  }
  c.io = detail::byte_path(self, hdl, std::move(tls));
  c.io.start();
  write_frame_header(c, frame_header{kind_hello, hello_payload_size, 0});
  auto hb = encode_hello(hello{st.opts.receive_window, st.opts.max_payload});
  send_bytes(c, hb.data(), hb.size());
  c.io.flush();
  expect_header(c);
  if (!c.io.is_tls()) announce(self, c);
}

uint64_t client_conn(bulk_broker* self) {
  auto& conns = self->state.conns;
  return conns.empty() ? 0 : conns.begin()->first;
}

constexpr auto refusal_log_interval = std::chrono::seconds(5);

// Refused at the cap: logged at once when the last such line is old,
// otherwise counted into the next one (log_refusals, on the tick).
void log_refusals(bulk_broker* self, const std::string& latest) {
  auto& st = self->state;
  auto now = clock_type::now();
  if (st.refused_unlogged == 0 || now - st.refusal_logged < refusal_log_interval) return;
  spdlog::warn("bulk channel: refused {} connection{} at the cap of {} open connections (latest from {})",
               st.refused_unlogged, st.refused_unlogged == 1 ? "" : "s", st.opts.max_connections,
               latest.empty() ? std::string{"-"} : latest);
  st.refused_unlogged = 0;
  st.refusal_logged = now;
}

void schedule_tick(bulk_broker* self) {
  auto t = self->state.opts.stall_timeout;
  // Also the refusal summaries' clock, so it runs without a stall timeout.
  caf::timespan every = refusal_log_interval;
  if (t.count() > 0) every = std::max<caf::timespan>(std::min<caf::timespan>(t / 4, every), std::chrono::milliseconds(10));
  self->delayed_send(self, every, bulk_tick_atom::value);
}

caf::behavior bulk_behavior(bulk_broker* self) {
  auto& opts = self->state.opts;
  if (opts.tls && opts.tls_threads < 0)
    self->state.crypto = crypto_pool::shared();
  else if (opts.tls && opts.tls_threads > 0)
    self->state.crypto = crypto_pool::make(static_cast<size_t>(opts.tls_threads));
  self->monitor(self->state.sink);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (dm.source == self->state.sink) {
      spdlog::debug("bulk channel: sink terminated, closing");
      self->quit(caf::exit_reason::normal);
    }
  });
  schedule_tick(self);
  return {
    [=](caf::io::new_connection_msg& msg) {
      auto& st = self->state;
      if (st.conns.size() >= st.opts.max_connections) {
        ++st.refused_unlogged;
        log_refusals(self, self->remote_addr(msg.handle) + ":" + std::to_string(self->remote_port(msg.handle)));
        self->close(msg.handle);
        return;
      }
      start_connection(self, msg.handle);
    },
    [=](caf::io::new_data_msg& msg) { on_data(self, msg); },
    [=](caf::io::connection_closed_msg& msg) {
      auto& st = self->state;
      auto i = st.by_hdl.find(msg.handle.id());
      if (i == st.by_hdl.end()) return;
      if (auto c = find_conn(self, i->second))
        drop(self, *c, "connection closed by peer", false, true);
    },
    [=](caf::io::data_transferred_msg& msg) {
      // The stream's in-flight buffer is drained when all that remains is the
      // pending buffer; the stream swaps that in next, so an empty pending
      // buffer can take a zero-copy frame now.
      auto& st = self->state;
      auto i = st.by_hdl.find(msg.handle.id());
      if (i == st.by_hdl.end()) return;
      auto c = find_conn(self, i->second);
      if (c && !c->queue.empty() && msg.remaining == self->wr_buf(c->hdl).size()) pump(self, *c, true);
    },
    [=](caf::io::acceptor_closed_msg&) {
      spdlog::warn("bulk channel: listening socket closed");
    },
    [=](bulk_send_atom, uint64_t conn, uint16_t kind, uint64_t tag, std::vector<char>& p) {
      return enqueue_send(self, conn, kind, tag, std::move(p));
    },
    [=](bulk_send_atom, uint64_t conn, uint16_t kind, uint64_t tag, std::vector<float>& p) {
      return enqueue_send(self, conn, kind, tag, std::move(p));
    },
    [=](bulk_send_atom, uint64_t conn, uint16_t kind, uint64_t tag, bulk_buffer& p) {
      return enqueue_send(self, conn, kind, tag, std::move(p));
    },
    [=](bulk_send_atom, uint16_t kind, uint64_t tag, std::vector<char>& p) {
      return enqueue_send(self, client_conn(self), kind, tag, std::move(p));
    },
    [=](bulk_send_atom, uint16_t kind, uint64_t tag, std::vector<float>& p) {
      return enqueue_send(self, client_conn(self), kind, tag, std::move(p));
    },
    [=](bulk_send_atom, uint16_t kind, uint64_t tag, bulk_buffer& p) {
      return enqueue_send(self, client_conn(self), kind, tag, std::move(p));
    },
    [=](detail::tls_done_atom, uint64_t conn) { on_tls_done(self, conn); },
    [=](bulk_closed_atom, uint64_t conn) {
      if (auto c = find_conn(self, conn)) drop(self, *c, "closed locally", false);
    },
    [=](bulk_tick_atom) {
      auto& st = self->state;
      log_refusals(self, {});
      auto now = clock_type::now();
      std::vector<uint64_t> stalled;
      for (auto& kv : st.conns) {
        auto& c = kv.second;
        c.io.trim();
        bool mid = !c.hello_received || c.rd != read_state::header;
        if (st.opts.stall_timeout.count() > 0 && mid && now - c.last_progress > st.opts.stall_timeout)
          stalled.push_back(kv.first);
      }
      auto ms = std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(st.opts.stall_timeout).count());
      for (auto id : stalled)
        if (auto c = find_conn(self, id))
          drop(self, *c,
               c->io.handshake_done()
                 ? "stalled: no progress for " + ms + " ms inside a frame or handshake"
                 : "stalled: TLS handshake not completed within " + ms + " ms",
               true);
      schedule_tick(self);
    },
  };
}

caf::behavior listener_fun(bulk_broker* self, caf::io::doorman_ptr dm, caf::actor sink,
                           bulk_options opts) {
  self->state.sink = std::move(sink);
  self->state.opts = std::move(opts);
  self->add_doorman(std::move(dm));
  return bulk_behavior(self);
}

caf::behavior client_fun(bulk_broker* self, caf::io::connection_handle hdl, caf::actor sink,
                         bulk_options opts, std::string host) {
  self->state.sink = std::move(sink);
  self->state.opts = std::move(opts);
  self->state.client = true;
  start_connection(self, hdl, host);
  return bulk_behavior(self);
}

caf::error check_options(const bulk_options& o, tls_side side) {
  if (o.tls && o.tls->side() != side)
    return fail(side == tls_side::server ? "bulk listener needs a server TLS context"
                                         : "bulk client needs a client TLS context");
  if (o.receive_window == 0) return fail("bulk_options.receive_window must be > 0");
  if (o.chunk_bytes == 0) return fail("bulk_options.chunk_bytes must be > 0");
  if (o.tls_read_bytes < min_tls_read_bytes)
    return fail("bulk_options.tls_read_bytes must be >= " + std::to_string(min_tls_read_bytes));
  // Credit held back on an idle sink must never block the peer's largest
  // frame, or a quiet connection would deadlock (frame.hpp, take_credit).
  if (o.lazy_credit_bytes > 0 && o.receive_window < frame_cost(o.max_payload) + o.lazy_credit_bytes)
    return fail("bulk_options.receive_window must cover the largest frame plus lazy_credit_bytes");
  return caf::none;
}

}  // namespace

void add_transport_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<bulk_frame>("cleave::bulk_frame");
  cfg.add_message_type<bulk_buffer>("cleave::bulk_buffer");
  cfg.add_message_type<std::vector<float>>("std::vector<float>");
}

caf::expected<bulk_listener> spawn_bulk_listener(caf::actor_system& sys, uint16_t port,
                                                 caf::actor sink, bulk_options opts) {
  if (!sink) return fail("bulk listener needs a sink actor");
  if (auto err = check_options(opts, tls_side::server)) return err;
  auto& mm = sys.middleman();
  const char* in = opts.bind_address.empty() ? nullptr : opts.bind_address.c_str();
  auto dm = mm.backend().new_tcp_doorman(port, in, opts.reuse_address);
  if (!dm)
    return fail("bulk listener cannot listen on port " + std::to_string(port) + ": " +
                caf::to_string(dm.error()));
  auto bound = (*dm)->port();
  auto channel = mm.spawn_broker(listener_fun, std::move(*dm), std::move(sink), std::move(opts));
  return bulk_listener{std::move(channel), bound};
}

caf::expected<uint16_t> open_bulk_listener(caf::actor_system& sys, uint16_t port, caf::actor sink,
                                           bulk_options opts) {
  auto l = spawn_bulk_listener(sys, port, std::move(sink), std::move(opts));
  if (!l) return l.error();
  return l->port;
}

caf::expected<caf::actor> connect_bulk(caf::actor_system& sys, const std::string& host,
                                       uint16_t port, caf::actor sink, bulk_options opts) {
  if (!sink) return fail("bulk channel needs a sink actor");
  if (auto err = check_options(opts, tls_side::client)) return err;
  auto fd = connect_tcp(host, port, std::chrono::duration_cast<std::chrono::milliseconds>(opts.connect_timeout));
  if (!fd) return fd.error();
  auto adopt = [](bulk_broker* self, caf::io::network::native_socket s, caf::actor sink, bulk_options o,
                  std::string h) { return client_fun(self, self->add_scribe(s), std::move(sink), std::move(o), std::move(h)); };
  return sys.middleman().spawn_broker(adopt, *fd, std::move(sink), std::move(opts), host);
}

}  // namespace cleave::transport
