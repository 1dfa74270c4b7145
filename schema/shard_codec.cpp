#include "schema/shard_codec.hpp"

#include <cmath>

#include "schema/byte_io.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr size_t tensor_header_bytes = 16;              // rows, cols
constexpr size_t attach_fixed_bytes = 1 + 1 + 4 * 8;    // axis, decay, shape, range
constexpr size_t product_fixed_bytes = 1 + 4 + 1 + 4 + 1;  // kind, weight, transposes, beta, operands
constexpr size_t product_tag_bytes = 4 + 1;                 // layer, role (after the products)
constexpr uint8_t max_product_role = 5;                     // gemm_role::attn_grad
constexpr size_t update_bytes = 6 * 8 + 8 + 8;
constexpr uint8_t has_b = 1, has_c_in = 2;

caf::error bad(const char* what, const std::string& why) {
  return fail(std::string("shard ") + what + " frame: " + why);
}

size_t view_bytes(const const_view<float>& v) {
  return tensor_header_bytes + static_cast<size_t>(v.rows * v.cols) * sizeof(float);
}

void put_view(byte_writer& w, const const_view<float>& v) {
  w.put(v.rows);
  w.put(v.cols);
  for (int64_t r = 0; r < v.rows; ++r) w.raw(v.data + r * v.ld, static_cast<size_t>(v.cols) * sizeof(float));
}

// A tensor whose shape is checked against the caps and the bytes left before it is sized.
bool get_tensor(byte_reader& r, tensor& t, std::string& why) {
  int64_t rows = 0, cols = 0;
  if (!r.get(rows) || !r.get(cols)) {
    why = "truncated tensor shape";
    return false;
  }
  if (rows < 0 || cols < 0 || rows > max_shard_dim || cols > max_shard_dim) {
    why = "tensor shape " + std::to_string(rows) + "x" + std::to_string(cols) + " out of range";
    return false;
  }
  const auto n = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  if (n > r.left() / sizeof(float)) {
    why = "a " + std::to_string(rows) + "x" + std::to_string(cols) + " tensor does not fit the frame";
    return false;
  }
  t.resize(rows, cols);
  return r.raw(t.data(), n * sizeof(float));
}

// A count of items of at least min_bytes each: within the cap and the bytes left.
bool get_count(byte_reader& r, uint32_t& n, size_t min_bytes, std::string& why) {
  if (!r.get(n)) {
    why = "truncated count";
    return false;
  }
  if (n > max_shard_tensors || n > r.left() / min_bytes) {
    why = "count " + std::to_string(n) + " exceeds the cap or the frame";
    return false;
  }
  return true;
}

}  // namespace

uint64_t shard_frame_cap(uint16_t kind, uint64_t max_payload) {
  const bool large = shard_kind_in_parts(kind) || kind == static_cast<uint16_t>(shard_kind::part)
                     || kind == static_cast<uint16_t>(shard_kind::restore);
  return large ? max_payload : small_shard_frame_bytes;
}

bool shard_kind_in_parts(uint16_t kind) {
  switch (static_cast<shard_kind>(kind)) {
    case shard_kind::attach:
    case shard_kind::products:
    case shard_kind::add_grads:
    case shard_kind::tensors:
      return true;
    default:
      return false;
  }
}

std::vector<char> encode_shard_attach(const std::vector<shard_attach_entry>& entries) {
  size_t bytes = 4;
  for (const auto& e : entries)
    bytes += attach_fixed_bytes + view_bytes(e.value.view()) + view_bytes(e.adam_m.view())
             + view_bytes(e.adam_v.view());
  std::vector<char> out(bytes);
  byte_writer w(out.data());
  w.put(static_cast<uint32_t>(entries.size()));
  for (const auto& e : entries) {
    w.put(e.axis);
    w.put(static_cast<uint8_t>(e.decay));
    w.put(e.full_rows);
    w.put(e.full_cols);
    w.put(e.begin);
    w.put(e.end);
    for (const tensor* t : {&e.value, &e.adam_m, &e.adam_v}) put_view(w, t->view());
  }
  return out;
}

caf::expected<std::vector<shard_attach_entry>> decode_shard_attach(const char* data, size_t size) {
  byte_reader r(data, size);
  std::string why;
  uint32_t n = 0;
  if (!get_count(r, n, attach_fixed_bytes + 3 * tensor_header_bytes, why)) return bad("attach", why);
  std::vector<shard_attach_entry> out(n);
  for (uint32_t i = 0; i < n; ++i) {
    auto& e = out[i];
    uint8_t decay = 0;
    if (!r.get(e.axis) || !r.get(decay) || !r.get(e.full_rows) || !r.get(e.full_cols) || !r.get(e.begin)
        || !r.get(e.end))
      return bad("attach", "truncated parameter " + std::to_string(i));
    if (e.axis > 1 || decay > 1) return bad("attach", "parameter " + std::to_string(i) + ": unknown axis or flag");
    e.decay = decay == 1;
    const int64_t extent = e.axis == 0 ? e.full_cols : e.full_rows;
    if (e.full_rows < 0 || e.full_cols < 0 || e.full_rows > max_shard_dim || e.full_cols > max_shard_dim
        || e.begin < 0 || e.begin > e.end || e.end > extent)
      return bad("attach", "parameter " + std::to_string(i) + ": shape or range out of bounds");
    for (tensor* t : {&e.value, &e.adam_m, &e.adam_v}) {
      if (!get_tensor(r, *t, why)) return bad("attach", "parameter " + std::to_string(i) + ": " + why);
      if (t->rows() != e.slice_rows() || t->cols() != e.slice_cols())
        return bad("attach", "parameter " + std::to_string(i) + ": a tensor is not its slice's shape");
    }
  }
  if (r.left() != 0) return bad("attach", "trailing bytes");
  return out;
}

std::vector<char> encode_shard_products(const std::vector<shard_product_ref>& products) {
  size_t bytes = 4;
  for (const auto& p : products) {
    bytes += product_fixed_bytes + view_bytes(p.a);
    if (p.kind == 1) bytes += view_bytes(p.b);
    if (p.kind == 0 && p.beta != 0.0f) bytes += view_bytes(p.c_in);
  }
  bytes += products.size() * product_tag_bytes;
  std::vector<char> out(bytes);
  byte_writer w(out.data());
  w.put(static_cast<uint32_t>(products.size()));
  for (const auto& p : products) {
    const bool b = p.kind == 1, c_in = p.kind == 0 && p.beta != 0.0f;
    w.put(p.kind);
    w.put(p.weight);
    w.put(static_cast<uint8_t>((p.trans_a ? 1 : 0) | (p.trans_b ? 2 : 0) | (p.trans_w ? 4 : 0)));
    w.put(p.beta);
    w.put(static_cast<uint8_t>((b ? has_b : 0) | (c_in ? has_c_in : 0)));
    put_view(w, p.a);
    if (b) put_view(w, p.b);
    if (c_in) put_view(w, p.c_in);
  }
  for (const auto& p : products) {
    w.put(p.layer);
    w.put(p.role);
  }
  return out;
}

caf::expected<std::vector<shard_product_msg>> decode_shard_products(const char* data, size_t size) {
  byte_reader r(data, size);
  std::string why;
  uint32_t n = 0;
  if (!get_count(r, n, product_fixed_bytes + tensor_header_bytes, why)) return bad("products", why);
  std::vector<shard_product_msg> out(n);
  for (uint32_t i = 0; i < n; ++i) {
    auto& p = out[i];
    uint8_t transposes = 0, operands = 0;
    if (!r.get(p.kind) || !r.get(p.weight) || !r.get(transposes) || !r.get(p.beta) || !r.get(operands))
      return bad("products", "truncated product " + std::to_string(i));
    if (p.kind > 1 || transposes > 7 || p.weight < 0 || !std::isfinite(p.beta))
      return bad("products", "product " + std::to_string(i) + ": unknown kind, flags or weight");
    p.trans_a = (transposes & 1) != 0;
    p.trans_b = (transposes & 2) != 0;
    p.trans_w = (transposes & 4) != 0;
    // The operands a kind needs, and no others.
    const uint8_t expected = p.kind == 1 ? has_b : (p.beta != 0.0f ? has_c_in : 0);
    if (operands != expected) return bad("products", "product " + std::to_string(i) + ": wrong operands");
    if (!get_tensor(r, p.a, why) || ((operands & has_b) && !get_tensor(r, p.b, why))
        || ((operands & has_c_in) && !get_tensor(r, p.c_in, why)))
      return bad("products", "product " + std::to_string(i) + ": " + why);
  }
  for (auto& p : out) {
    if (!r.get(p.layer) || !r.get(p.role)) return bad("products", "truncated layers and roles");
    if (p.role > max_product_role) return bad("products", "unknown product role " + std::to_string(p.role));
  }
  if (r.left() != 0) return bad("products", "trailing bytes");
  return out;
}

std::vector<char> encode_shard_tensors(const std::vector<const_view<float>>& tensors) {
  size_t bytes = 4;
  for (const auto& v : tensors) bytes += view_bytes(v);
  std::vector<char> out(bytes);
  byte_writer w(out.data());
  w.put(static_cast<uint32_t>(tensors.size()));
  for (const auto& v : tensors) put_view(w, v);
  return out;
}

caf::expected<std::vector<tensor>> decode_shard_tensors(const char* data, size_t size) {
  byte_reader r(data, size);
  std::string why;
  uint32_t n = 0;
  if (!get_count(r, n, tensor_header_bytes, why)) return bad("tensors", why);
  std::vector<tensor> out(n);
  for (uint32_t i = 0; i < n; ++i)
    if (!get_tensor(r, out[i], why)) return bad("tensors", "tensor " + std::to_string(i) + ": " + why);
  if (r.left() != 0) return bad("tensors", "trailing bytes");
  return out;
}

std::vector<char> encode(const shard_update_msg& m) {
  std::vector<char> out(update_bytes);
  byte_writer w(out.data());
  for (double v : {m.cfg.lr, m.cfg.beta1, m.cfg.beta2, m.cfg.eps, m.cfg.weight_decay, m.cfg.clip_norm}) w.put(v);
  w.put(m.t);
  w.put(m.grad_scale);
  return out;
}

caf::expected<shard_update_msg> decode_shard_update(const char* data, size_t size) {
  if (size != update_bytes) return bad("update", "is " + std::to_string(size) + " bytes, not " + std::to_string(update_bytes));
  byte_reader r(data, size);
  shard_update_msg m;
  for (double* v : {&m.cfg.lr, &m.cfg.beta1, &m.cfg.beta2, &m.cfg.eps, &m.cfg.weight_decay, &m.cfg.clip_norm})
    r.get(*v);
  r.get(m.t);
  r.get(m.grad_scale);
  if (m.t < 1 || !std::isfinite(m.grad_scale) || !std::isfinite(m.cfg.lr) || !std::isfinite(m.cfg.eps))
    return bad("update", "step or scale out of range");
  return m;
}

std::vector<char> encode_shard_double(double v) {
  std::vector<char> out(8);
  byte_writer(out.data()).put(v);
  return out;
}

caf::expected<double> decode_shard_double(const char* data, size_t size) {
  if (size != 8) return bad("sum_of_squares", "is " + std::to_string(size) + " bytes, not 8");
  double v = 0;
  byte_reader(data, size).get(v);
  return v;
}

std::vector<char> encode(const shard_stats& s) {
  std::vector<char> out(s.devices ? 24 + 8 * 8 : 24);
  byte_writer w(out.data());
  w.put(s.peak_rss_bytes);
  w.put(s.bytes_in);
  w.put(s.bytes_out);
  if (s.devices) {
    w.put(s.tiles);
    w.put(s.bytes_down);
    w.put(s.bytes_up);
    w.put(s.local_gemms);
    w.put(s.issue_seconds);
    w.put(s.wait_seconds);
    w.put(s.egress_seconds);
    w.put(s.ingress_seconds);
  }
  return out;
}

caf::expected<shard_stats> decode_shard_stats(const char* data, size_t size) {
  if (size != 24 && size != 24 + 8 * 8) return bad("stats", "is " + std::to_string(size) + " bytes, not 24 or 88");
  byte_reader r(data, size);
  shard_stats s;
  r.get(s.peak_rss_bytes);
  r.get(s.bytes_in);
  r.get(s.bytes_out);
  if (size > 24) {
    s.devices = true;
    r.get(s.tiles);
    r.get(s.bytes_down);
    r.get(s.bytes_up);
    r.get(s.local_gemms);
    r.get(s.issue_seconds);
    r.get(s.wait_seconds);
    r.get(s.egress_seconds);
    r.get(s.ingress_seconds);
  }
  return s;
}

std::vector<char> encode_shard_refusal(const std::string& reason) {
  const std::string cut = reason.substr(0, max_refusal_bytes);
  std::vector<char> out(2 + cut.size());
  byte_writer(out.data()).text(cut);
  return out;
}

caf::expected<std::string> decode_shard_refusal(const char* data, size_t size) {
  byte_reader r(data, size);
  std::string reason;
  if (!r.text(reason, max_refusal_bytes) || r.left() != 0) return bad("refused", "malformed reason");
  return reason;
}

}  // namespace cleave
