#pragma once
// The field lists the shard frames (shard_codec.cpp) and a shard's own
// checkpoint file (shard_checkpoint_file.cpp) share: a tensor, and a
// parameter's slice, which the file lays out as an attach frame does.

#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/tensor.hpp"
#include "schema/shard_codec.hpp"
#include "schema/wire.hpp"

namespace cleave {

struct shard_checkpoint_slice;
struct shard_attach_view;

namespace shard_wire {

inline const_view<float> view_of(const tensor& t) { return t.view(); }
inline const_view<float> view_of(const tensor* t) { return t->view(); }
inline const_view<float> view_of(const const_view<float>& v) { return v; }

// rows, cols (i64), then the floats row-major. A view is written row by
// row (a strided window needs no copy first), a whole tensor as one block
// a gathering writer leaves where it is; a tensor read is checked against
// the caps and the bytes left before it is sized.
template <class T>
struct tensor_field : wire::custom_field {
  T& t;  // tensor, or (writing) a const tensor, const tensor* or const_view<float>
  explicit tensor_field(T& x) : t(x) {}
  void put(wire::writer& w) const {
    const auto v = view_of(t);
    w(v.rows, v.cols);
    const size_t row = static_cast<size_t>(v.cols) * sizeof(float);
    if (v.ld == v.cols) return w.large(v.data, static_cast<size_t>(v.rows) * row);
    for (int64_t r = 0; r < v.rows; ++r) w.large(v.data + r * v.ld, row);
  }
  bool get(wire::reader& r) {
    int64_t rows = 0, cols = 0;
    if (!r(rows, cols)) return r.fail("truncated tensor shape");
    const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    if (rows < 0 || cols < 0 || rows > max_shard_dim || cols > max_shard_dim)
      return r.fail("tensor shape " + shape + " out of range");
    const auto n = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
    if (n > r.left() / sizeof(float)) return r.fail("a " + shape + " tensor does not fit the frame");
    t.resize(rows, cols);
    return r.bytes().raw(t.data(), n * sizeof(float));
  }
};
template <class T>
tensor_field<T> as_tensor(T& t) { return tensor_field<T>(t); }

template <class S>
inline constexpr bool is_slice = std::is_same_v<S, shard_attach_entry> || std::is_same_v<S, shard_checkpoint_slice>
                                 || std::is_same_v<S, shard_attach_view>;

}  // namespace shard_wire

// A list's items as shard tensors.
template <class M, class Io>
wire::fields_of<M, tensor> wire_fields(M& t, Io& io) {
  return io(shard_wire::as_tensor(t));
}
template <class M, class Io>
wire::fields_of<M, const_view<float>> wire_fields(M& v, Io& io) {
  return io(shard_wire::as_tensor(v));
}

// A parameter's slice: an attach frame's entry, a shard checkpoint's slice.
template <class M, class Io>
std::enable_if_t<shard_wire::is_slice<std::remove_const_t<M>>, bool> wire_fields(M& e, Io& io) {
  return io(e.axis, e.decay, e.full_rows, e.full_cols, e.begin, e.end, shard_wire::as_tensor(e.value),
            shard_wire::as_tensor(e.adam_m), shard_wire::as_tensor(e.adam_v));
}

}  // namespace cleave
