#include "schema/shard_parts.hpp"

#include <algorithm>
#include <string>

#include "schema/byte_io.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

caf::error bad(const std::string& why) { return fail("shard part: " + why); }

}  // namespace

std::vector<char> encode_shard_part(uint16_t kind, const std::vector<char>& whole, uint64_t offset,
                                    uint64_t part_bytes) {
  const uint64_t n = offset < whole.size() ? std::min<uint64_t>(part_bytes, whole.size() - offset) : 0;
  std::vector<char> out(shard_part_header_bytes + n);
  byte_writer w(out.data());
  w.put(kind);
  w.put(static_cast<uint64_t>(whole.size()));
  w.put(offset);
  w.raw(whole.data() + offset, n);
  return out;
}

caf::expected<shard_part> decode_shard_part(const char* data, size_t size) {
  byte_reader r(data, size);
  shard_part p;
  if (!r.get(p.kind) || !r.get(p.total) || !r.get(p.offset)) return bad("truncated header");
  p.data = data + shard_part_header_bytes;
  p.size = size - shard_part_header_bytes;
  if (p.total == 0 || p.total > max_shard_message_bytes)
    return bad("a total of " + std::to_string(p.total) + " bytes is out of range");
  if (p.size == 0) return bad("no bytes");
  if (p.offset > p.total || p.size > p.total - p.offset)
    return bad("bytes [" + std::to_string(p.offset) + ", +" + std::to_string(p.size) + ") past the total "
               + std::to_string(p.total));
  return p;
}

caf::error shard_part_assembler::add(const shard_part& part) {
  caf::error why;
  if (!started_ && part.offset != 0)
    why = bad("a message starts at offset " + std::to_string(part.offset) + ", not 0 (its first part is missing)");
  else if (started_ && (part.kind != kind_ || part.total != total_))
    why = bad("kind " + std::to_string(part.kind) + ", total " + std::to_string(part.total) + " in a message of kind "
              + std::to_string(kind_) + ", total " + std::to_string(total_));
  else if (started_ && part.offset != bytes_.size())
    why = bad("offset " + std::to_string(part.offset) + " where " + std::to_string(bytes_.size())
              + " was due (out of order, overlapping or after a gap)");
  else if (part.total > max_shard_message_bytes || part.offset > part.total || part.size > part.total - part.offset)
    why = bad("bytes past the total");
  if (why) {
    reset();
    return why;
  }
  if (!started_) {
    started_ = true;
    kind_ = part.kind;
    total_ = part.total;
  }
  // Grow with what arrived (doubling, never past the total): a claimed total costs nothing.
  const size_t need = bytes_.size() + part.size;
  if (need > bytes_.capacity()) bytes_.reserve(std::min<size_t>(total_, std::max(need, 2 * bytes_.capacity())));
  bytes_.insert(bytes_.end(), part.data, part.data + part.size);
  return {};
}

std::vector<char> shard_part_assembler::take() {
  std::vector<char> out = std::move(bytes_);
  reset();
  return out;
}

void shard_part_assembler::reset() {
  started_ = false;
  kind_ = 0;
  total_ = 0;
  bytes_ = std::vector<char>();
}

}  // namespace cleave
