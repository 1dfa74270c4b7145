#include "schema/shard_codec.hpp"

#include <cmath>

#include "schema/errors.hpp"
#include "schema/shard_wire.hpp"
#include "schema/wire.hpp"

namespace cleave {

namespace {

constexpr uint8_t max_product_role = 5;  // gemm_role::attn_grad
constexpr uint8_t has_b = 1, has_c_in = 2;

caf::error bad(const char* what, const std::string& why) {
  return fail(std::string("shard ") + what + " frame: " + why);
}

}  // namespace

template <class M, class Io>
wire::fields_of<M, shard_update_msg> wire_fields(M& m, Io& io) {
  return io(m.cfg.lr, m.cfg.beta1, m.cfg.beta2, m.cfg.eps, m.cfg.weight_decay, m.cfg.clip_norm, m.t, m.grad_scale);
}

// The device side's counts are a tail: a shard without devices sends none.
template <class M, class Io>
wire::fields_of<M, shard_stats> wire_fields(M& s, Io& io) {
  return io(s.peak_rss_bytes, s.bytes_in, s.bytes_out,
            wire::tail(wire::flag(s.devices), s.tiles, s.bytes_down, s.bytes_up, s.local_gemms, s.issue_seconds,
                       s.wait_seconds, s.egress_seconds, s.ingress_seconds));
}

namespace {

// A product's transposes: a, b and w as bits 0, 1 and 2 of a byte.
template <class P>
struct product_transposes : wire::custom_field {
  P& p;
  explicit product_transposes(P& x) : p(x) {}
  void put(wire::writer& w) const {
    w(static_cast<uint8_t>((p.trans_a ? 1 : 0) | (p.trans_b ? 2 : 0) | (p.trans_w ? 4 : 0)));
  }
  bool get(wire::reader& r) {
    uint8_t bits = 0;
    if (!r(bits)) return false;
    if (bits > 7) r.mark_invalid("unknown transposes");
    p.trans_a = (bits & 1) != 0;
    p.trans_b = (bits & 2) != 0;
    p.trans_w = (bits & 4) != 0;
    return true;
  }
};

// A product's operands: a byte saying which follow a (b for into_grad, c_in
// for times_slice with beta != 0: the ones its kind needs and no others).
template <class P>
struct product_operands : wire::custom_field {
  P& p;
  explicit product_operands(P& x) : p(x) {}
  uint8_t needed() const { return p.kind == 1 ? has_b : (p.kind == 0 && p.beta != 0.0f ? has_c_in : 0); }
  template <class Io>
  bool operands(Io& io, uint8_t which) const {
    return io(shard_wire::as_tensor(p.a)) && (!(which & has_b) || io(shard_wire::as_tensor(p.b)))
           && (!(which & has_c_in) || io(shard_wire::as_tensor(p.c_in)));
  }
  void put(wire::writer& w) const {
    w(needed());
    operands(w, needed());
  }
  bool get(wire::reader& r) {
    uint8_t which = 0;
    if (!r(which)) return false;
    if (which != needed()) return r.fail("wrong operands");
    return operands(r, which);
  }
};

// The products, then each product's gemm_tag (layer, role) after the last:
// the tags came later, and a frame without them is refused.
template <class V>
auto products_fields(V& products) {
  return wire::group(
      wire::list<uint32_t>(products, max_shard_tensors,
                           [](auto& p) {
                             using P = std::remove_reference_t<decltype(p)>;
                             return wire::group(p.kind, p.weight, product_transposes<P>(p), p.beta,
                                                product_operands<P>(p));
                           }),
      wire::each(products, [](auto& p) { return wire::group(p.layer, p.role); }));
}

// A list of shard messages read from the whole frame: the count within
// max_shard_tensors and the frame, every item checked as it is read.
template <class V>
caf::expected<V> read_list(const char* data, size_t size, const char* what) {
  V out;
  wire::reader r(data, size);
  if (!r(wire::list<uint32_t>(out, max_shard_tensors))) return bad(what, r.why());
  if (r.invalid() != nullptr) return bad(what, r.invalid());
  if (r.left() != 0) return bad(what, "trailing bytes");
  return out;
}

template <class V>
std::vector<char> write_list(const V& items) {
  return wire::encode(wire::list<uint32_t>(items, max_shard_tensors));
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

std::vector<char> encode_shard_attach(const std::vector<shard_attach_entry>& entries) { return write_list(entries); }

caf::expected<std::vector<shard_attach_entry>> decode_shard_attach(const char* data, size_t size) {
  auto out = read_list<std::vector<shard_attach_entry>>(data, size, "attach");
  if (!out) return out;
  for (size_t i = 0; i < out->size(); ++i) {
    const auto& e = (*out)[i];
    const std::string which = "parameter " + std::to_string(i);
    if (e.axis > 1) return bad("attach", which + ": unknown axis or flag");
    const int64_t extent = e.axis == 0 ? e.full_cols : e.full_rows;
    if (e.full_rows < 0 || e.full_cols < 0 || e.full_rows > max_shard_dim || e.full_cols > max_shard_dim
        || e.begin < 0 || e.begin > e.end || e.end > extent)
      return bad("attach", which + ": shape or range out of bounds");
    for (const tensor* t : {&e.value, &e.adam_m, &e.adam_v})
      if (t->rows() != e.slice_rows() || t->cols() != e.slice_cols())
        return bad("attach", which + ": a tensor is not its slice's shape");
  }
  return out;
}

std::vector<char> encode_shard_products(const std::vector<shard_product_ref>& products) {
  return wire::encode(products_fields(products));
}

caf::expected<std::vector<shard_product_msg>> decode_shard_products(const char* data, size_t size) {
  std::vector<shard_product_msg> out;
  wire::reader r(data, size);
  if (!r(products_fields(out))) return bad("products", r.why());
  if (r.invalid() != nullptr) return bad("products", r.invalid());
  if (r.left() != 0) return bad("products", "trailing bytes");
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& p = out[i];
    if (p.kind > 1 || p.weight < 0 || !std::isfinite(p.beta))
      return bad("products", "product " + std::to_string(i) + ": unknown kind, flags or weight");
    if (p.role > max_product_role) return bad("products", "unknown product role " + std::to_string(p.role));
  }
  return out;
}

std::vector<char> encode_shard_tensors(const std::vector<const_view<float>>& tensors) { return write_list(tensors); }

caf::expected<std::vector<tensor>> decode_shard_tensors(const char* data, size_t size) {
  return read_list<std::vector<tensor>>(data, size, "tensors");
}

std::vector<char> encode(const shard_update_msg& m) { return wire::encode(m); }

caf::expected<shard_update_msg> decode_shard_update(const char* data, size_t size) {
  auto m = wire::read_whole<shard_update_msg>(data, size, "shard update frame");
  if (m && (m->t < 1 || !std::isfinite(m->grad_scale) || !std::isfinite(m->cfg.lr) || !std::isfinite(m->cfg.eps)))
    return bad("update", "step or scale out of range");
  return m;
}

std::vector<char> encode_shard_double(double v) { return wire::encode(v); }

caf::expected<double> decode_shard_double(const char* data, size_t size) {
  double v = 0;
  if (!wire::decode_exact(data, size, v)) return bad("sum_of_squares", "is " + std::to_string(size) + " bytes, not 8");
  return v;
}

std::vector<char> encode(const shard_stats& s) { return wire::encode(s); }

caf::expected<shard_stats> decode_shard_stats(const char* data, size_t size) {
  return wire::read_whole<shard_stats>(data, size, "shard stats frame");
}

std::vector<char> encode_shard_refusal(const std::string& reason) {
  return wire::encode(wire::text(reason, max_refusal_bytes));
}

caf::expected<std::string> decode_shard_refusal(const char* data, size_t size) {
  std::string reason;
  if (!wire::decode_exact(data, size, wire::text(reason, max_refusal_bytes))) return bad("refused", "malformed reason");
  return reason;
}

}  // namespace cleave
