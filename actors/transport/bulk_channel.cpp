// The bulk channel's broker: one connection state machine (header, hello,
// payload read directly or in chunks), its receive and send windows, its
// send queue and the broker's behavior. It stays one file of about 600 lines
// because all of these read and write the same `connection` record inside
// one actor's handlers; cut apart, each part would need that record's
// internals. Frame encoding and checks live in frame.cpp; how bytes meet the
// socket (plaintext or TLS) in bulk_io.cpp.
#include "actors/transport/bulk_channel.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>
#include <utility>
#include <type_traits>
#include <variant>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/transport/bulk_io.hpp"
#include "actors/transport/tcp_connect.hpp"
#include "schema/errors.hpp"

namespace cleave::transport {

namespace {

using bulk_tick_atom = caf::atom_constant<caf::atom("bulk_tick")>;
using clock_type = std::chrono::steady_clock;
using payload_buffer = std::variant<std::vector<char>, std::vector<float>, bulk_buffer>;

size_t byte_size(const std::vector<char>& v) { return v.size(); }
size_t byte_size(const std::vector<float>& v) { return v.size() * sizeof(float); }
size_t byte_size(const bulk_buffer& b) { return b.size(); }
size_t byte_size(const payload_buffer& p) {
  return std::visit([](const auto& v) { return byte_size(v); }, p);
}

// Frames at least this large wait for an empty pending-write buffer under
// TLS (see pump); smaller ones are appended at once.
constexpr size_t tls_batch_bytes = size_t{64} << 10;

struct outgoing {
  uint16_t kind;
  uint64_t tag;
  payload_buffer payload;
  caf::response_promise rp;
};

enum class read_state { header, hello, payload_direct, payload_chunked };

struct connection {
  uint64_t id = 0;
  caf::io::connection_handle hdl;
  std::string peer;
  read_state rd = read_state::header;
  frame_header pending;            // header of the frame being read
  std::vector<char> assembling;    // chunked payloads
  uint64_t remaining = 0;          // chunked payload bytes still to read
  bool hello_received = false;
  bool data_seen = false;           // a data frame's header passed the checks
  uint64_t peer_max_payload = 0;
  receive_window rw;
  send_window sw;
  std::deque<outgoing> queue;
  uint64_t queued_bytes = 0;
  size_t at_sink = 0;  // frames delivered whose reply is pending
  detail::byte_path io;
  clock_type::time_point last_progress;
  explicit connection(uint64_t window) : rw(window) {}
};

struct bulk_state {
  caf::actor sink;
  bulk_options opts;
  bool client = false;
  std::string closed_reason;  // client: why its one connection is gone
  uint64_t next_id = 1;
  std::unordered_map<uint64_t, connection> conns;         // by connection id
  std::unordered_map<int64_t, uint64_t> by_hdl;           // handle id -> connection id
  std::vector<std::vector<char>> pool;                    // reusable read buffers, size == capacity
  uint64_t pool_bytes = 0;
  // Connections refused at the cap since the last line about them: a swarm
  // past the cap is one line per refusal_log_interval, not one per socket.
  uint64_t refused_unlogged = 0;
  clock_type::time_point refusal_logged{};
  static const char* name;
};
const char* bulk_state::name = "cleave.bulk_channel";

using bulk_broker = caf::io::stateful_broker<bulk_state>;

// CAF 0.17's default multiplexer derives a connection handle's id from its
// native socket (network::conn_hdl_from_socket), so the id is the fd. Used
// only for setsockopt/shutdown while the broker owns the connection.
int native_fd(caf::io::connection_handle hdl) { return static_cast<int>(hdl.id()); }

void tune_socket(caf::io::connection_handle hdl, const bulk_options& opts) {
  if (opts.socket_buffer_bytes <= 0) return;
  auto fd = native_fd(hdl);
  int v = opts.socket_buffer_bytes;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

connection* find_conn(bulk_broker* self, uint64_t id) {
  auto i = self->state.conns.find(id);
  return i == self->state.conns.end() ? nullptr : &i->second;
}

// A TLS session that cannot encrypt is broken for good: shut the socket so
// CAF reports the close and drop() runs from the connection_closed handler,
// instead of dropping the connection in the middle of a caller's loop.
void send_bytes(connection& c, const char* data, size_t size) {
  if (auto err = c.io.write(data, size)) {
    spdlog::warn("bulk channel: connection {} ({}): {}", c.id, c.peer, describe(err));
    ::shutdown(native_fd(c.hdl), SHUT_RDWR);
  }
}

void write_frame_header(connection& c, const frame_header& h) {
  auto bytes = encode_header(h);
  send_bytes(c, bytes.data(), bytes.size());
}

void expect_header(connection& c) {
  c.rd = read_state::header;
  c.io.expect(frame_header_size);
}

// Removes a connection: notify the sink, fail queued sends, close the socket
// unless the peer already did. `c` is dangling afterwards.
enum class close_how { abort, tls_alert };

void drop(bulk_broker* self, connection& c, const std::string& reason, bool malformed,
          bool already_closed = false, close_how how = close_how::abort) {
  auto& st = self->state;
  if (malformed)
    spdlog::warn("bulk channel: closing connection {} ({}): {}", c.id, c.peer, reason);
  else
    spdlog::debug("bulk channel: connection {} ({}) closed: {}", c.id, c.peer, reason);
  for (auto& o : c.queue) o.rp.deliver(fail("bulk connection " + std::to_string(c.id) + " closed: " + reason));
  auto id = c.id;
  auto hdl = c.hdl;
  // A refused TLS handshake gets the alert saying why: a few bytes, written
  // and flushed before the (graceful) close.
  if (how == close_how::tls_alert && !already_closed) c.io.send_alert();
  st.by_hdl.erase(hdl.id());
  st.conns.erase(id);
  if (!already_closed) {
    // A misbehaving peer gets no graceful drain: shut the socket down so
    // CAF's pending writes to it fail and their buffers are released now,
    // even if the peer never reads again.
    if (malformed && how == close_how::abort) ::shutdown(native_fd(hdl), SHUT_RDWR);
    self->close(hdl);
  }
  self->send(st.sink, bulk_closed_atom::value, id, reason);
  if (st.client) st.closed_reason = reason;
}

// Writes queued frames while the peer's window allows. A bulk_buffer frame is
// swapped into the connection's (empty) pending-write buffer instead of being
// copied; while that buffer holds data the frame waits for the write-completion
// event (data_transferred_msg), which calls pump again.
void pump(bulk_broker* self, connection& c) {
  bool wrote = false;
  while (!c.queue.empty() && c.sw.is_open()) {
    auto& o = c.queue.front();
    auto len = byte_size(o.payload);
    if (len > c.peer_max_payload) {
      o.rp.deliver(fail("frame of " + std::to_string(len) + " bytes exceeds the peer's cap of " +
                        std::to_string(c.peer_max_payload) + " bytes"));
    } else if (!c.sw.can_send(len)) {
      break;
    } else if (c.io.is_tls() && len >= tls_batch_bytes && !c.io.pending().empty()) {
      // Encrypt large frames into an empty pending buffer only: it keeps the
      // capacity of earlier frames (CAF swaps it with the in-flight one), so
      // the ciphertext never reallocates and is never copied, and encryption
      // of this frame overlaps the socket's write of the previous one.
      break;  // resumes on data_transferred_msg
    } else if (auto bb = std::get_if<bulk_buffer>(&o.payload); bb && c.io.is_tls()) {
      // Encryption copies anyway: write header and payload through the
      // session and hand the buffer back emptied, capacity kept for reuse.
      auto& bytes = bb->storage();
      if (bytes.size() < frame_header_size) bytes.resize(frame_header_size);
      encode_header(frame_header{o.kind, len, o.tag}, bytes.data());
      send_bytes(c, bytes.data(), bytes.size());
      bytes.clear();
      c.sw.sent(len);
      wrote = true;
      o.rp.deliver(std::move(*bb));
    } else if (bb) {
      auto& out = self->wr_buf(c.hdl);
      if (!out.empty()) break;  // resumes on data_transferred_msg
      auto& bytes = bb->storage();
      if (bytes.size() < frame_header_size) bytes.resize(frame_header_size);
      encode_header(frame_header{o.kind, len, o.tag}, bytes.data());
      out.swap(bytes);  // bytes now holds a drained buffer: the caller's next one
      bytes.clear();
      c.sw.sent(len);
      wrote = true;
      o.rp.deliver(std::move(*bb));
    } else {
      write_frame_header(c, frame_header{o.kind, len, o.tag});
      std::visit(
        [&](auto& v) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, bulk_buffer>) {
            if (len > 0) send_bytes(c, reinterpret_cast<const char*>(v.data()), len);
            // The bytes are in the write buffer: hand the caller its buffer back.
            o.rp.deliver(std::move(v));
          }
        },
        o.payload);
      c.sw.sent(len);
      wrote = true;
    }
    c.queued_bytes -= len;
    c.queue.pop_front();
  }
  if (wrote) c.io.flush();
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
  if (opts.first_data_kind != 0 && !c.data_seen && h->kind != opts.first_data_kind)
    return drop(self, c,
                "the first frame must be of kind " + std::to_string(opts.first_data_kind) + ", not "
                  + std::to_string(h->kind),
                true);
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
    auto name = c.io.tls()->session.peer_name();
    spdlog::debug("bulk channel: connection {} ({}): TLS peer '{}'", c.id, c.peer, name);
    self->send(st.sink, bulk_peer_atom::value, c.id, std::move(name));
  }
}

void on_data(bulk_broker* self, caf::io::new_data_msg& msg) {
  auto& st = self->state;
  auto i = st.by_hdl.find(msg.handle.id());
  if (i == st.by_hdl.end()) return;
  auto id = i->second;
  auto c = find_conn(self, id);
  if (!c) return;
  if (!c->io.is_tls()) return on_unit(self, c, msg.buf);
  // Ciphertext: the read buffer stays CAF's (at_most reads reuse it).
  auto err = c->io.receive(
    msg.buf,
    [&] {
      c->last_progress = clock_type::now();
      announce(self, *c);
      return true;
    },
    [&](std::vector<char>& unit) {
      on_unit(self, c, unit);
      return (c = find_conn(self, id)) != nullptr;
    });
  // Before the handshake the peer gets the alert saying why (a few bytes, so
  // the graceful close cannot hang on a peer that does not read); after it,
  // a broken session is a hostile peer like any other: abort.
  if (err && (c = find_conn(self, id)))
    drop(self, *c, describe(err), true, false,
         c->io.handshake_done() ? close_how::abort : close_how::tls_alert);
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
  if (st.opts.tls) tls = std::make_unique<detail::tls_link>(st.opts.tls, peer_host, st.opts.tls_read_bytes);
  c.io = detail::byte_path(self, hdl, std::move(tls));
  c.io.start();
  write_frame_header(c, frame_header{kind_hello, hello_payload_size, 0});
  auto hb = encode_hello(hello{st.opts.receive_window, st.opts.max_payload});
  send_bytes(c, hb.data(), hb.size());
  c.io.flush();
  expect_header(c);
  if (!c.io.is_tls()) announce(self, c);
}

caf::response_promise enqueue_send(bulk_broker* self, uint64_t conn, uint16_t kind, uint64_t tag,
                                   payload_buffer&& payload) {
  auto rp = self->make_response_promise();
  auto& st = self->state;
  if (kind >= first_reserved_kind) {
    rp.deliver(fail("frame kind " + std::to_string(kind) + " is reserved for the channel"));
    return rp;
  }
  auto c = find_conn(self, conn);
  if (!c) {
    if (st.client && !st.closed_reason.empty())
      rp.deliver(fail("bulk connection closed: " + st.closed_reason));
    else
      rp.deliver(fail("no bulk connection " + std::to_string(conn)));
    return rp;
  }
  auto len = byte_size(payload);
  if (c->hello_received && len > c->peer_max_payload) {
    rp.deliver(fail("frame of " + std::to_string(len) + " bytes exceeds the peer's cap of " +
                    std::to_string(c->peer_max_payload) + " bytes"));
    return rp;
  }
  if (!c->queue.empty() && c->queued_bytes + len > st.opts.max_send_queue) {
    rp.deliver(fail("send queue full on bulk connection " + std::to_string(conn) + " (" +
                    std::to_string(c->queued_bytes) + " bytes waiting)"));
    return rp;
  }
  c->queued_bytes += len;
  c->queue.push_back(outgoing{kind, tag, std::move(payload), rp});
  pump(self, *c);
  return rp;
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
      if (c && !c->queue.empty() && msg.remaining == self->wr_buf(c->hdl).size()) pump(self, *c);
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
