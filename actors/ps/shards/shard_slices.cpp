#include "actors/ps/shards/shard_slices.hpp"

#include <algorithm>

namespace cleave {

std::vector<index_range> split_evenly(int64_t n, int s) {
  std::vector<index_range> out(static_cast<size_t>(s));
  const int64_t base = n / s, extra = n % s;
  int64_t at = 0;
  for (int64_t i = 0; i < s; ++i) {
    const int64_t len = base + (i < extra ? 1 : 0);
    out[static_cast<size_t>(i)] = {at, at + len};
    at += len;
  }
  return out;
}

const_view<float> window(const tensor& full, const shard_slice& s) {
  return s.axis == shard_axis::columns ? full.cols_view(s.range.begin, s.range.size())
                                       : full.rows_view(s.range.begin, s.range.size());
}

mut_view<float> window(tensor& full, const shard_slice& s) {
  return s.axis == shard_axis::columns ? full.cols_view(s.range.begin, s.range.size())
                                       : full.rows_view(s.range.begin, s.range.size());
}

void copy_out(const tensor& full, const shard_slice& s, tensor& part) {
  auto w = window(full, s);
  part.resize(w.rows, w.cols);
  for (int64_t r = 0; r < w.rows; ++r)
    std::copy(w.data + r * w.ld, w.data + r * w.ld + w.cols, part.data() + r * w.cols);
}

void copy_in(const tensor& part, const shard_slice& s, tensor& full) {
  auto w = window(full, s);
  for (int64_t r = 0; r < w.rows; ++r)
    std::copy(part.data() + r * w.cols, part.data() + (r + 1) * w.cols, w.data + r * w.ld);
}

void moment_out(const tensor& full, const shard_slice& s, const tensor& value_part, tensor& part) {
  if (!full.empty()) return copy_out(full, s, part);
  part.resize(value_part.rows(), value_part.cols());
  part.zero();
}

void add_out(const tensor& full, const shard_slice& s, tensor& part) {
  auto w = window(full, s);
  for (int64_t r = 0; r < w.rows; ++r) {
    const float* src = w.data + r * w.ld;
    float* dst = part.data() + r * w.cols;
    for (int64_t c = 0; c < w.cols; ++c) dst[c] += src[c];
  }
}

}  // namespace cleave
