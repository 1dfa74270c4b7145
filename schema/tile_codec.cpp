#include "schema/tile_codec.hpp"

#include "schema/byte_io.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr size_t key_bytes = 8 + 4 + 4;
constexpr size_t operand_head_bytes = 8 + 8 + 8 + 1 + 1;

void put_key(byte_writer& w, const tile_key& k) {
  w.put(k.step);
  w.put(k.gemm);
  w.put(k.tile);
}

bool get_key(byte_reader& r, tile_key& k) { return r.get(k.step) && r.get(k.gemm) && r.get(k.tile); }

// Values an operand puts on the wire: its data, or its snapshot window.
size_t value_count(const operand& op) {
  if (!op.data.empty()) return op.data.size();
  return op.window_valid() ? static_cast<size_t>(op.rows * op.cols) : 0;
}

void put_operand(byte_writer& w, const operand& op) {
  w.put(op.key);
  w.put(op.rows);
  w.put(op.cols);
  w.put(static_cast<uint8_t>(op.trans));
  const bool values = value_count(op) > 0;
  w.put(static_cast<uint8_t>(values));
  if (!values) return;
  if (!op.data.empty()) return w.floats(op.data);
  // A snapshot window is strided: row by row into the (unaligned) frame.
  const float* src = op.shared->data() + op.offset;
  const size_t row = static_cast<size_t>(op.cols) * sizeof(float);
  for (int64_t r = 0; r < op.rows; ++r) w.raw(src + r * op.ld, row);
}

caf::error get_operand(byte_reader& r, operand& op, const char* which) {
  uint8_t trans = 0, has_data = 0;
  if (!(r.get(op.key) && r.get(op.rows) && r.get(op.cols) && r.get(trans) && r.get(has_data)))
    return fail(std::string{"tile frame: truncated operand "} + which);
  if (op.rows < 0 || op.cols < 0 || trans > 1 || has_data > 1
      || (op.rows != 0 && op.cols > max_block_elements / op.rows))
    return fail(std::string{"tile frame: operand "} + which + " has an invalid shape or flags");
  op.trans = trans == 1;
  if (has_data == 1 && !r.floats(op.data, op.rows * op.cols))
    return fail(std::string{"tile frame: operand "} + which + " is shorter than its shape");
  return caf::none;
}

}  // namespace

size_t encoded_size(const tile_task& t) {
  return key_bytes + 2 * operand_head_bytes + (value_count(t.a) + value_count(t.b)) * sizeof(float);
}

void encode(const tile_task& t, char* out) {
  byte_writer w(out);
  put_key(w, t.key);
  put_operand(w, t.a);
  put_operand(w, t.b);
}

caf::expected<tile_task> decode_task(const char* data, size_t size) {
  byte_reader r(data, size);
  tile_task t;
  if (!get_key(r, t.key)) return fail("tile frame: truncated task key");
  if (auto err = get_operand(r, t.a, "a")) return err;
  if (auto err = get_operand(r, t.b, "b")) return err;
  if (r.left() != 0) return fail("tile frame: " + std::to_string(r.left()) + " trailing bytes");
  return t;
}

size_t encoded_size(const tile_result& res) {
  return key_bytes + 4 + 4 + 8 + 8 + 8 + res.data.size() * sizeof(float);
}

void encode(const tile_result& res, char* out) {
  byte_writer w(out);
  put_key(w, res.key);
  w.put(res.device);
  w.put(res.cache_hits);
  w.put(res.rows);
  w.put(res.cols);
  w.put(res.busy_seconds);
  w.floats(res.data);
}

caf::expected<tile_result> decode_result(const char* data, size_t size) {
  byte_reader r(data, size);
  tile_result res;
  if (!(get_key(r, res.key) && r.get(res.device) && r.get(res.cache_hits) && r.get(res.rows)
        && r.get(res.cols) && r.get(res.busy_seconds)))
    return fail("result frame: truncated header");
  if (res.rows < 0 || res.cols < 0 || (res.rows != 0 && res.cols > max_block_elements / res.rows))
    return fail("result frame: invalid shape");
  if (!r.floats(res.data, res.rows * res.cols)) return fail("result frame: shorter than its shape");
  if (r.left() != 0) return fail("result frame: " + std::to_string(r.left()) + " trailing bytes");
  return res;
}

size_t encoded_size(const tile_miss&) { return key_bytes + 4 + 8; }

void encode(const tile_miss& m, char* out) {
  byte_writer w(out);
  put_key(w, m.key);
  w.put(m.device);
  w.put(m.operand_key);
}

caf::expected<tile_miss> decode_miss(const char* data, size_t size) {
  byte_reader r(data, size);
  tile_miss m;
  if (!(get_key(r, m.key) && r.get(m.device) && r.get(m.operand_key)) || r.left() != 0)
    return fail("miss frame: malformed");
  return m;
}

}  // namespace cleave
