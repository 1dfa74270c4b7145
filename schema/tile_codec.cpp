#include "schema/tile_codec.hpp"

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

// An operand's values after its shape: a flag, then rows * cols floats when
// it carries them (none: "use the block cached under its key").
template <class Op>
struct operand_values : wire::custom_field {
  Op& op;
  explicit operand_values(Op& o) : op(o) {}
  void put(wire::writer& w) const {
    const bool values = value_count(op) > 0;
    w(values);
    if (!values) return;
    if (!op.data.empty()) return w.bytes().floats(op.data);
    // A snapshot window is strided: row by row into the (unaligned) frame.
    const float* src = op.shared->data() + op.offset;
    const size_t row = static_cast<size_t>(op.cols) * sizeof(float);
    for (int64_t r = 0; r < op.rows; ++r) w.bytes().raw(src + r * op.ld, row);
  }
  bool get(wire::reader& r) {
    bool values = false;
    if (!r(values)) return r.fail("truncated operand");
    if (!block_shape_ok(op.rows, op.cols) || r.invalid()) return r.fail("an operand has an invalid shape or flags");
    if (values && !r.bytes().floats(op.data, op.rows * op.cols)) return r.fail("an operand is shorter than its shape");
    return true;
  }
};

// A result's rows * cols floats, after its shape.
template <class Res>
struct result_values : wire::custom_field {
  Res& res;
  explicit result_values(Res& r) : res(r) {}
  void put(wire::writer& w) const { w.bytes().floats(res.data); }
  bool get(wire::reader& r) {
    if (!block_shape_ok(res.rows, res.cols)) return r.fail("invalid shape");
    return r.bytes().floats(res.data, res.rows * res.cols) || r.fail("shorter than its shape");
  }
};

}  // namespace

template <class M, class Io>
wire::fields_of<M, tile_key> wire_fields(M& k, Io& io) {
  return io(k.step, k.gemm, k.tile);
}

template <class M, class Io>
wire::fields_of<M, operand> wire_fields(M& op, Io& io) {
  return io(op.key, op.rows, op.cols, op.trans, operand_values<M>(op));
}

template <class M, class Io>
wire::fields_of<M, tile_task> wire_fields(M& t, Io& io) {
  return io(t.key, t.a, t.b);
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
