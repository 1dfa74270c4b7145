#include "schema/shard_gathered.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "schema/errors.hpp"
#include "schema/shard_parts.hpp"
#include "schema/shard_wire.hpp"
#include "schema/wire.hpp"

namespace cleave {

gathered_message gather_shard_attach(const std::vector<shard_attach_view>& entries) {
  const auto fields = wire::list<uint32_t>(entries, max_shard_tensors);
  gathered_message m;
  m.total = wire::size_of(fields);
  uint64_t float_bytes = 0;
  for (const auto& e : entries)
    for (const auto* v : {&e.value, &e.adam_m, &e.adam_v})
      float_bytes += static_cast<uint64_t>(v->rows * v->cols) * sizeof(float);
  m.fixed.resize(m.total - float_bytes);
  wire::writer w(m.fixed.data(), m.pieces);
  w(fields);
  w.finish();
  return m;
}

void gathered_reader::copy(uint64_t offset, uint64_t n, char* out) {
  while (n > 0 && piece_ < m_.pieces.size()) {
    const auto& p = m_.pieces[piece_];
    if (offset >= piece_start_ + p.size()) {
      piece_start_ += p.size();
      ++piece_;
      continue;
    }
    const uint64_t from = offset - piece_start_;
    const uint64_t k = std::min<uint64_t>(n, p.size() - from);
    std::memcpy(out, p.data() + from, k);
    out += k;
    offset += k;
    n -= k;
  }
}

std::vector<char> encode_shard_part(uint16_t kind, const gathered_message& m, gathered_reader& reader,
                                    uint64_t offset, uint64_t part_bytes) {
  const uint64_t n = offset < m.total ? std::min(part_bytes, m.total - offset) : 0;
  auto out = shard_part_frame(kind, m.total, offset, n);
  reader.copy(offset, n, out.data() + shard_part_header_bytes);
  return out;
}

uint64_t shard_tensors_sink::total() const {
  uint64_t bytes = sizeof(uint32_t);
  for (const auto& v : into_) bytes += 2 * sizeof(int64_t) + static_cast<uint64_t>(v.rows * v.cols) * sizeof(float);
  return bytes;
}

bool shard_tensors_sink::take_head(const char*& data, size_t& n, size_t want) {
  const size_t k = std::min(n, want - head_bytes_);
  std::memcpy(head_ + head_bytes_, data, k);
  head_bytes_ += k;
  data += k;
  n -= k;
  if (head_bytes_ < want) return false;
  head_bytes_ = 0;
  return true;
}

caf::error shard_tensors_sink::add(const char* data, size_t n) {
  auto bad = [this](const std::string& why) {
    tensor_ = into_.size() + 1;  // spent: complete() stays false
    return fail("shard tensors answer: " + why);
  };
  while (n > 0) {
    if (!counted_) {
      if (!take_head(data, n, sizeof(uint32_t))) return {};
      uint32_t count = 0;
      std::memcpy(&count, head_, sizeof(count));
      if (count != into_.size())
        return bad(std::to_string(count) + " tensors, expected " + std::to_string(into_.size()));
      counted_ = true;
    } else if (tensor_ >= into_.size()) {
      return bad("bytes past its last tensor");
    } else if (!in_floats_) {
      if (!take_head(data, n, 2 * sizeof(int64_t))) return {};
      int64_t rows = 0, cols = 0;
      std::memcpy(&rows, head_, sizeof(rows));
      std::memcpy(&cols, head_ + sizeof(rows), sizeof(cols));
      const auto& v = into_[tensor_];
      if (rows != v.rows || cols != v.cols)
        return bad("tensor " + std::to_string(tensor_) + " is " + std::to_string(rows) + "x" + std::to_string(cols)
                   + ", expected " + std::to_string(v.rows) + "x" + std::to_string(v.cols));
      in_floats_ = rows * cols > 0;
      float_bytes_ = 0;
      if (!in_floats_) ++tensor_;
    } else {
      const auto& v = into_[tensor_];
      const uint64_t row_bytes = static_cast<uint64_t>(v.cols) * sizeof(float);
      const uint64_t all = static_cast<uint64_t>(v.rows) * row_bytes;
      uint64_t k = std::min<uint64_t>(n, all - float_bytes_);
      n -= k;
      while (k > 0) {  // row by row: the window may be strided
        const uint64_t r = float_bytes_ / row_bytes, at = float_bytes_ % row_bytes;
        const uint64_t m = std::min(k, row_bytes - at);
        std::memcpy(reinterpret_cast<char*>(v.data + static_cast<int64_t>(r) * v.ld) + at, data, m);
        data += m;
        float_bytes_ += m;
        k -= m;
      }
      if (float_bytes_ == all) {
        in_floats_ = false;
        ++tensor_;
      }
    }
  }
  return {};
}

}  // namespace cleave
