#pragma once
// Shard messages the coordinator writes and reads without a second copy of
// the model: an attach frame laid out as pieces (its fixed fields in one
// small buffer, the floats read where they are) and cut into parts from
// them, and an answer of tensors read into their places as its parts
// arrive. The bytes are the ones encode_shard_attach and
// encode_shard_tensors (shard_codec.hpp) write; only where they are kept differs.

#include <cstdint>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "kernels/tensor.hpp"
#include "schema/shard_codec.hpp"

namespace cleave {

// An attach entry whose tensors are views (of the coordinator's whole
// tensors, or a row of zeros repeated: ld 0).
struct shard_attach_view {
  uint8_t axis = 0;
  bool decay = false;
  int64_t full_rows = 0, full_cols = 0;
  int64_t begin = 0, end = 0;
  const_view<float> value, adam_m, adam_v;
};

// A message as pieces in order; `fixed` holds the bytes that are not a
// tensor's floats, and the pieces point into it and into the tensors.
struct gathered_message {
  std::vector<char> fixed;
  std::vector<std::string_view> pieces;
  uint64_t total = 0;
};

gathered_message gather_shard_attach(const std::vector<shard_attach_view>& entries);

// Copies bytes [offset, offset + n) of a gathered message out, in order of
// offset: each call starts where the last one ended or later.
class gathered_reader {
 public:
  explicit gathered_reader(const gathered_message& m) : m_(m) {}
  void copy(uint64_t offset, uint64_t n, char* out);

 private:
  const gathered_message& m_;
  size_t piece_ = 0;
  uint64_t piece_start_ = 0;  // the message offset of pieces[piece_]
};

// A part frame (shard_parts.hpp) of the gathered message: at most
// part_bytes of it from `offset`.
std::vector<char> encode_shard_part(uint16_t kind, const gathered_message& m, gathered_reader& reader,
                                    uint64_t offset, uint64_t part_bytes);

// A tensors message (an update's values) read as its bytes arrive, a frame
// or a part at a time, straight into the windows `into` (the coordinator's
// whole values): its tensors must be shaped as they are, in order. No copy
// of the message is kept, however many parts it has.
class shard_tensors_sink {
 public:
  explicit shard_tensors_sink(std::vector<mut_view<float>> into) : into_(std::move(into)) {}
  // The message's length in bytes.
  uint64_t total() const;
  // The next n bytes; says why they do not fit (then the sink is spent).
  caf::error add(const char* data, size_t n);
  bool complete() const { return counted_ && tensor_ == into_.size(); }

 private:
  // Fills head_ up to `want` bytes; whether it holds them.
  bool take_head(const char*& data, size_t& n, size_t want);

  std::vector<mut_view<float>> into_;
  char head_[16] = {};
  size_t head_bytes_ = 0;
  bool counted_ = false;   // the count was read
  size_t tensor_ = 0;      // whose shape or floats come next
  bool in_floats_ = false;
  uint64_t float_bytes_ = 0;  // of tensor_'s floats so far
};

}  // namespace cleave
