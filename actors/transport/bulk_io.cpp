#include "actors/transport/bulk_io.hpp"

#include <algorithm>

#include <caf/io/receive_policy.hpp>

#include "schema/errors.hpp"

namespace cleave::transport::detail {

namespace {

// Work below this stays on the broker when the pipe is idle: a header, a
// credit frame or a record's worth costs less than the round trip to a pool
// thread and back.
constexpr size_t inline_bytes = 16384;

}  // namespace

void byte_path::start() {
  if (!tls_) return;
  self_->configure_read(hdl_, caf::io::receive_policy::at_most(tls_->read_bytes));
  flush();  // a client's ClientHello
}

void byte_path::expect(size_t n) {
  if (!tls_) {
    self_->configure_read(hdl_, caf::io::receive_policy::exactly(n));
    return;
  }
  tls_->want = n;
  tls_->have = 0;
  // Like CAF's exactly(n): sized when asked for; the header check has
  // bounded n (a payload, or one chunk of it) before anyone asks. Only the
  // state machine asks, from a unit it holds, so no decryption holds it now.
  tls_->unit.resize(n);
}

caf::error byte_path::write(const char* data, size_t size) {
  if (!tls_) {
    self_->write(hdl_, size, data);
    return caf::none;
  }
  auto& t = *tls_;
  if (t.pipe.idle())  // ciphertext straight into the socket's pending buffer
    return t.pipe.session().write(data, size, self_->wr_buf(hdl_));
  // Behind posted work: sealed in turn, so records stay in sequence order.
  seal_input in;
  in.head.assign(data, data + size);
  t.pipe.seal(std::move(in), {}, false);
  return caf::none;
}

std::optional<payload_buffer> byte_path::seal_frame(seal_input&& in, caf::error& err) {
  auto& t = *tls_;
  auto size = in.head.size() + body_size(in.body);
  bool run_inline = t.pipe.idle() && (!t.pipe.offloads() || !t.open || size < inline_bytes);
  in.frame = true;
  if (run_inline) {
    // Sealed straight into the pending buffer: no copy beyond encryption.
    auto& out = self_->wr_buf(hdl_);
    auto r = t.pipe.seal(std::move(in), std::move(out), true);
    out = std::move(r->wire);
    err = std::move(r->err);
    return std::move(r->input.body);
  }
  ++t.frames_sealing;
  t.pipe.seal(std::move(in), std::move(t.spare_wire), false);
  t.spare_wire = {};
  return std::nullopt;
}

void byte_path::flush() {
  if (tls_ && tls_->pipe.idle()) tls_->pipe.session().drain(self_->wr_buf(hdl_));
  self_->flush(hdl_);
}

void byte_path::trim() {
  if (tls_ && !tls_->unit_out && tls_->inbox.empty() && tls_->engine_buffered == 0) tls_->pipe.trim();
}

void byte_path::send_alert() {
  if (!tls_) return;
  flush();
}

void byte_path::put_wire(std::vector<char>& wire) {
  if (wire.empty()) {
    if (wire.capacity() > tls_->spare_wire.capacity()) tls_->spare_wire.swap(wire);
    return;
  }
  auto& out = self_->wr_buf(hdl_);
  if (out.empty()) {
    // Zero-copy: the sealed buffer becomes the pending one; the drained
    // pending buffer (capacity kept) is the next seal's.
    out.swap(wire);
    wire.clear();
    if (wire.capacity() > tls_->spare_wire.capacity()) tls_->spare_wire.swap(wire);
  } else {
    out.insert(out.end(), wire.begin(), wire.end());
  }
  self_->flush(hdl_);
}

caf::error byte_path::receive(std::vector<char>& ciphertext, const tls_events& ev) {
  auto& t = *tls_;
  bool gone = false;
  if (!t.unit_out && t.inbox.empty() && t.engine_buffered == 0 && t.pipe.idle() && t.want > 0 &&
      ciphertext.size() <= inline_bytes) {
    // A small read (heartbeats, credit, a small frame): decrypted from CAF's
    // buffer, which CAF keeps reading into, so a quiet connection costs no
    // buffer beyond CAF's, as without the pool.
    auto r = t.pipe.open_in_place(ciphertext.data(), ciphertext.size(), std::move(t.unit), t.have, t.want);
    if (auto err = apply(r, ev, gone)) return err;
    if (gone) return caf::none;
    return drive(ev, gone);
  }
  // Keep CAF's buffer, give it a spare to read into next: the ciphertext
  // moves to the pipe without a copy.
  auto buf = t.pipe.spare();
  buf.swap(ciphertext);
  auto size = buf.size();
  if (t.unit_out) {
    t.pipe.arrived(std::move(buf));
    t.arrived_bytes += size;
  } else {
    t.inbox_bytes += size;
    t.inbox.push_back(std::move(buf));
  }
  // A verified peer keeps to the window we advertised; ciphertext beyond it
  // (plus record overhead and a few reads of slack) is a peer that ignores
  // the window, and would otherwise pile up while decryption runs.
  auto waiting = t.inbox_bytes + t.engine_buffered + t.arrived_bytes;
  if (waiting > t.inbox_cap)
    return fail("TLS: " + std::to_string(waiting) + " bytes of ciphertext waiting, more than the receive window allows");
  return drive(ev, gone);
}

caf::error byte_path::on_tls_done(const tls_events& ev) {
  auto& t = *tls_;
  bool gone = false;
  while (auto r = t.pipe.take()) {
    if (auto err = apply(*r, ev, gone)) return err;
    if (gone) return caf::none;
  }
  return drive(ev, gone);
}

// Applies one result on the broker: ciphertext to the socket, then what the
// plaintext means (handshake done, a full unit, a frame sent).
caf::error byte_path::apply(tls_result& r, const tls_events& ev, bool& gone) {
  auto& t = *tls_;
  put_wire(r.wire);
  if (r.sealed) {
    if (r.err) return std::move(r.err);
    if (!r.input.frame) return caf::none;
    --t.frames_sealing;
    gone = !ev.on_sealed(std::move(r.input.body));
    return caf::none;
  }
  t.unit = std::move(r.unit);
  t.have = r.have;
  t.unit_out = false;
  t.engine_buffered = r.buffered;
  // What the job did not take (it had finished its unit, or it ended just
  // before the bytes came) is decrypted next.
  t.inbox_bytes += t.pipe.take_arrived(t.inbox);
  t.arrived_bytes = 0;
  if (r.err) return std::move(r.err);
  if (!t.open && r.handshake_done) {
    t.open = true;
    if ((gone = !ev.on_open())) return caf::none;
  }
  if (t.want > 0 && t.have == t.want) {
    t.have = 0;
    // Plaintext of a record may remain in the session: decrypt again even
    // if no ciphertext is waiting.
    t.retry = true;
    if ((gone = !ev.on_unit(t.unit))) return caf::none;
    // Handlers that do not ask for a new unit keep the current one (CAF's
    // read policy stays configured the same way).
    if (t.unit.size() != t.want) t.unit.resize(t.want);
  }
  return caf::none;
}

// Decrypts while there is something to decrypt and nobody holds the unit:
// inline when small and the pipe is idle, otherwise posted (one at a time,
// since where the next unit goes depends on what this one says).
caf::error byte_path::drive(const tls_events& ev, bool& gone) {
  auto& t = *tls_;
  while (!t.unit_out && t.want > 0 && (!t.inbox.empty() || t.retry)) {
    auto avail = t.inbox_bytes + t.engine_buffered;
    bool small = std::min(t.want - t.have, avail + inline_bytes) <= inline_bytes;
    bool run_inline = !t.pipe.offloads() || (t.pipe.idle() && (!t.open || small));
    t.retry = false;
    auto in = std::move(t.inbox);
    t.inbox.clear();
    t.inbox_bytes = 0;
    auto r = t.pipe.open(std::move(in), std::move(t.unit), t.have, t.want, run_inline);
    if (!r) {
      t.unit_out = true;
      break;
    }
    if (auto err = apply(*r, ev, gone)) return err;
    if (gone) return caf::none;
  }
  if (t.pipe.idle()) flush();  // handshake records, key updates, data held during the handshake
  return caf::none;
}

}  // namespace cleave::transport::detail
