#include "actors/transport/bulk_io.hpp"

#include <caf/io/receive_policy.hpp>

namespace cleave::transport::detail {

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
  // bounded n (a payload, or one chunk of it) before anyone asks.
  tls_->unit.resize(n);
}

caf::error byte_path::write(const char* data, size_t size) {
  if (!tls_) {
    self_->write(hdl_, size, data);
    return caf::none;
  }
  // Ciphertext goes straight into the socket's pending buffer: no copy
  // beyond the encryption itself.
  return tls_->session.write(data, size, self_->wr_buf(hdl_));
}

void byte_path::flush() {
  if (tls_) tls_->session.drain(self_->wr_buf(hdl_));
  self_->flush(hdl_);
}

void byte_path::send_alert() {
  if (!tls_) return;
  tls_->session.drain(self_->wr_buf(hdl_));
  self_->flush(hdl_);
}

caf::error byte_path::receive(const std::vector<char>& ciphertext, const std::function<bool()>& on_open,
                              const std::function<bool(std::vector<char>&)>& on_unit) {
  auto& t = *tls_;
  if (auto err = t.session.push(ciphertext.data(), ciphertext.size())) return err;
  if (!t.open && t.session.handshake_done()) {
    t.open = true;
    if (!on_open()) return caf::none;
  }
  // Decrypt only as much as the unit still lacks, so plaintext lands in the
  // buffer that becomes the frame; whatever is left stays ciphertext in the
  // session until the next unit is configured. The session holds at most one
  // read's worth: this loop drains it before returning.
  while (t.open && t.want > 0) {
    auto n = t.session.pull(t.unit.data() + t.have, t.want - t.have);
    if (!n) return n.error();
    if (*n == 0) break;
    t.have += *n;
    if (t.have < t.want) continue;
    t.have = 0;
    if (!on_unit(t.unit)) return caf::none;
    // Handlers that do not ask for a new unit keep the current one (CAF's
    // read policy stays configured the same way).
    if (t.unit.size() != t.want) t.unit.resize(t.want);
  }
  flush();  // handshake records, key updates, data held during the handshake
  return caf::none;
}

}  // namespace cleave::transport::detail
