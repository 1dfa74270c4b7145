#include "actors/transport/bulk_connection.hpp"

#include <sys/socket.h>

#include <type_traits>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "schema/errors.hpp"

namespace cleave::transport::detail {

namespace {

size_t byte_size(const std::vector<char>& v) { return v.size(); }
size_t byte_size(const std::vector<float>& v) { return v.size() * sizeof(float); }
size_t byte_size(const bulk_buffer& b) { return b.size(); }
size_t byte_size(const payload_buffer& p) {
  return std::visit([](const auto& v) { return byte_size(v); }, p);
}

// The sender's buffer back, once its bytes are (sealed) in the write buffer.
void give_back(caf::response_promise& rp, payload_buffer&& body) {
  std::visit(
    [&](auto& v) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bulk_buffer>) v.storage().clear();
      rp.deliver(std::move(v));
    },
    body);
}

// Frames at least this large wait for an empty pending-write buffer under
// TLS (see pump); smaller ones are appended at once.
constexpr size_t tls_batch_bytes = size_t{64} << 10;

}  // namespace

const char* bulk_state::name = "cleave.bulk_channel";

connection* find_conn(bulk_broker* self, uint64_t id) {
  auto i = self->state.conns.find(id);
  return i == self->state.conns.end() ? nullptr : &i->second;
}

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

void drop(bulk_broker* self, connection& c, const std::string& reason, bool malformed,
          bool already_closed, close_how how) {
  auto& st = self->state;
  if (malformed)
    spdlog::warn("bulk channel: closing connection {} ({}): {}", c.id, c.peer, reason);
  else
    spdlog::debug("bulk channel: connection {} ({}) closed: {}", c.id, c.peer, reason);
  for (auto& o : c.queue) o.rp.deliver(fail("bulk connection " + std::to_string(c.id) + " closed: " + reason));
  // Sealing on the crypto pool: never reached the socket.
  for (auto& rp : c.sealing) rp.deliver(fail("bulk connection " + std::to_string(c.id) + " closed: " + reason));
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

void pump(bulk_broker* self, connection& c, bool pending_leaving) {
  bool wrote = false;
  while (!c.queue.empty() && c.sw.is_open()) {
    auto& o = c.queue.front();
    auto len = byte_size(o.payload);
    auto bb = std::get_if<bulk_buffer>(&o.payload);
    if (len > c.peer_max_payload) {
      o.rp.deliver(fail("frame of " + std::to_string(len) + " bytes exceeds the peer's cap of " +
                        std::to_string(c.peer_max_payload) + " bytes"));
    } else if (!c.sw.can_send(len)) {
      break;
    } else if (c.io.is_tls()) {
      // Large frames: one sealing at a time, into an empty pending buffer,
      // which keeps the capacity of earlier frames (CAF swaps it with the
      // in-flight one), so ciphertext never reallocates and is never copied.
      // On the pool the sealing overlaps the socket's write of the previous
      // frame: it may start while that frame is still pending, as long as
      // the pending buffer is about to be written (pending_leaving).
      if (len >= tls_batch_bytes &&
          (c.io.frame_sealing() || (!c.io.pending().empty() && !(pending_leaving && c.io.offloads()))))
        break;  // resumes on data_transferred_msg or when the sealing is done
      seal_input in;
      if (bb) {
        // Header in place in front of the payload: sealed as one write.
        auto& bytes = bb->storage();
        if (bytes.size() < frame_header_size) bytes.resize(frame_header_size);
        encode_header(frame_header{o.kind, len, o.tag}, bytes.data());
      } else {
        auto h = encode_header(frame_header{o.kind, len, o.tag});
        in.head.assign(h.begin(), h.end());
      }
      in.body = std::move(o.payload);
      caf::error err;
      auto back = c.io.seal_frame(std::move(in), err);
      c.sw.sent(len);
      wrote = true;
      if (back) {
        give_back(o.rp, std::move(*back));
      } else {
        c.sealing.push_back(std::move(o.rp));
      }
      if (err) {
        // As send_bytes: the session is broken, let CAF report the close.
        spdlog::warn("bulk channel: connection {} ({}): {}", c.id, c.peer, describe(err));
        ::shutdown(native_fd(c.hdl), SHUT_RDWR);
      }
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

void sealed(bulk_broker* self, connection& c, payload_buffer&& body) {
  if (!c.sealing.empty()) {
    give_back(c.sealing.front(), std::move(body));
    c.sealing.pop_front();
  }
  pump(self, c);
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

}  // namespace cleave::transport::detail
