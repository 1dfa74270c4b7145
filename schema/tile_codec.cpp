#include "schema/tile_codec.hpp"

#include "kernels/bf16.hpp"  // its inline conversions only: the fuzz targets build this file alone
#include "schema/errors.hpp"
#include "schema/wire.hpp"

namespace cleave {

namespace {

bool block_shape_ok(int64_t rows, int64_t cols) {
  return rows >= 0 && cols >= 0 && (rows == 0 || cols <= max_block_elements / rows);
}

// Values an operand puts on the wire: its data, or its snapshot window.
size_t value_count(const operand& op) {
  if (!op.data.empty()) return op.data.size();
  return op.window_valid() ? static_cast<size_t>(op.rows * op.cols) : 0;
}

// The wire's precision, one byte: a task's is the wire's mode (its
// operands' precision follows from it, and the result's it asks for), a
// result's that of its values, fp32 (0) or bf16 (1). Anything above `most`
// is refused before a value is read, since it says how long the values are.
template <class W>
struct precision_field : wire::custom_field {
  W& w;
  wire_precision most;
  precision_field(W& p, wire_precision m) : w(p), most(m) {}
  void put(wire::writer& out) const { out(static_cast<uint8_t>(w)); }
  bool get(wire::reader& r) {
    uint8_t b = 0;
    if (!r(b)) return r.fail("truncated precision");
    if (b > static_cast<uint8_t>(most)) return r.fail("an unknown wire precision " + std::to_string(b));
    w = static_cast<wire_precision>(b);
    return true;
  }
};

// n floats as the wire carries them: as they are (fp32), or each rounded to
// bf16 and sent as its upper 16 bits, widened again on arrival. The length
// is checked against the bytes left before anything is sized.
void put_values(wire::writer& w, const float* v, size_t n, wire_precision p) {
  if (p == wire_precision::fp32) return w.bytes().raw(v, n * sizeof(float));
  for (size_t i = 0; i < n; ++i) w.bytes().put(to_bf16(v[i]));
}

bool get_values(wire::reader& r, std::vector<float>& v, int64_t n, wire_precision p) {
  if (p == wire_precision::fp32) return r.bytes().floats(v, n);
  if (n < 0 || static_cast<uint64_t>(n) > r.left() / sizeof(uint16_t)) return false;
  std::vector<uint16_t> half(static_cast<size_t>(n));
  if (!r.bytes().raw(half.data(), half.size() * sizeof(uint16_t))) return false;
  v.resize(half.size());
  for (size_t i = 0; i < half.size(); ++i) v[i] = from_bf16(half[i]);
  return true;
}

// An operand's values after its shape: a flag, then rows * cols values in
// the task's operand precision when it carries them (none: "use the block cached
// under its key").
template <class Op, class W>
struct operand_values : wire::custom_field {
  Op& op;
  W& prec;
  operand_values(Op& o, W& p) : op(o), prec(p) {}
  void put(wire::writer& w) const {
    const bool values = value_count(op) > 0;
    w(values);
    if (!values) return;
    const wire_precision p = operand_precision(prec);
    if (!op.data.empty()) return put_values(w, op.data.data(), op.data.size(), p);
    // A snapshot window is strided: row by row into the (unaligned) frame.
    const float* src = op.shared->data() + op.offset;
    for (int64_t r = 0; r < op.rows; ++r) put_values(w, src + r * op.ld, static_cast<size_t>(op.cols), p);
  }
  bool get(wire::reader& r) {
    bool values = false;
    if (!r(values)) return r.fail("truncated operand");
    if (!block_shape_ok(op.rows, op.cols) || r.invalid()) return r.fail("an operand has an invalid shape or flags");
    if (values && !get_values(r, op.data, op.rows * op.cols, operand_precision(prec))) return r.fail("an operand is shorter than its shape");
    return true;
  }
};

// An operand's fields, its values in the task's precision (read before it).
template <class Op, class W>
struct operand_field : wire::custom_field {
  Op& op;
  W& prec;
  operand_field(Op& o, W& p) : op(o), prec(p) {}
  void put(wire::writer& w) const { w(op.key, op.rows, op.cols, op.trans, operand_values<Op, W>(op, prec)); }
  bool get(wire::reader& r) { return r(op.key, op.rows, op.cols, op.trans, operand_values<Op, W>(op, prec)); }
};

// A result's precision, then its rows * cols values in it, after its shape.
template <class Res>
struct result_values : wire::custom_field {
  Res& res;
  explicit result_values(Res& r) : res(r) {}
  void put(wire::writer& w) const {
    w(precision_field<const wire_precision>(res.wire, wire_precision::bf16));
    put_values(w, res.data.data(), res.data.size(), res.wire);
  }
  bool get(wire::reader& r) {
    if (!block_shape_ok(res.rows, res.cols)) return r.fail("invalid shape");
    if (!r(precision_field<wire_precision>(res.wire, wire_precision::bf16))) return false;
    return get_values(r, res.data, res.rows * res.cols, res.wire) || r.fail("shorter than its shape");
  }
};

}  // namespace

template <class M, class Io>
wire::fields_of<M, tile_key> wire_fields(M& k, Io& io) {
  return io(k.step, k.gemm, k.tile);
}

template <class M, class Io>
wire::fields_of<M, tile_task> wire_fields(M& t, Io& io) {
  using W = std::conditional_t<std::is_const_v<M>, const wire_precision, wire_precision>;
  using Op = std::conditional_t<std::is_const_v<M>, const operand, operand>;
  return io(t.key, precision_field<W>(t.wire, last_wire_precision), operand_field<Op, W>(t.a, t.wire),
            operand_field<Op, W>(t.b, t.wire));
}

template <class M, class Io>
wire::fields_of<M, tile_result> wire_fields(M& res, Io& io) {
  return io(res.key, res.device, res.cache_hits, res.rows, res.cols, res.busy_seconds, result_values<M>(res));
}

template <class M, class Io>
wire::fields_of<M, tile_miss> wire_fields(M& m, Io& io) {
  return io(m.key, m.device, m.operand_key);
}

size_t encoded_size(const tile_task& t) { return wire::size_of(t); }
void encode(const tile_task& t, char* out) { wire::write(out, t); }
caf::expected<tile_task> decode_task(const char* data, size_t size) { return wire::read_whole<tile_task>(data, size, "tile frame"); }

size_t encoded_size(const tile_result& res) { return wire::size_of(res); }
void encode(const tile_result& res, char* out) { wire::write(out, res); }
caf::expected<tile_result> decode_result(const char* data, size_t size) {
  return wire::read_whole<tile_result>(data, size, "result frame");
}

size_t encoded_size(const tile_miss& m) { return wire::size_of(m); }
void encode(const tile_miss& m, char* out) { wire::write(out, m); }
caf::expected<tile_miss> decode_miss(const char* data, size_t size) { return wire::read_whole<tile_miss>(data, size, "miss frame"); }

}  // namespace cleave
