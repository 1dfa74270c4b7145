#include "schema/shard_parts.hpp"

#include <algorithm>
#include <string>

#include "schema/errors.hpp"
#include "schema/wire.hpp"

namespace cleave {

namespace {

caf::error bad(const std::string& why) { return fail("shard part: " + why); }

// A part's bytes: whatever follows its header, to the frame's end.
template <class P>
struct rest_of_frame : wire::custom_field {
  P& p;
  explicit rest_of_frame(P& part) : p(part) {}
  void put(wire::writer& w) const { w.bytes().raw(p.data, p.size); }
  bool get(wire::reader& r) {
    p.size = r.left();
    p.data = p.size > 0 ? r.bytes().position() : nullptr;
    return r.bytes().skip(p.size);
  }
};

}  // namespace

template <class M, class Io>
wire::fields_of<M, shard_part> wire_fields(M& p, Io& io) {
  return io(p.kind, p.total, p.offset, rest_of_frame<M>(p));
}

std::vector<char> encode_shard_part(uint16_t kind, const std::vector<char>& whole, uint64_t offset,
                                    uint64_t part_bytes) {
  const uint64_t n = offset < whole.size() ? std::min<uint64_t>(part_bytes, whole.size() - offset) : 0;
  return wire::encode(shard_part{kind, whole.size(), offset, whole.data() + offset, n});
}

std::vector<char> shard_part_frame(uint16_t kind, uint64_t total, uint64_t offset, uint64_t n) {
  std::vector<char> out(shard_part_header_bytes + n);
  wire::write(out.data(), shard_part{kind, total, offset, nullptr, 0});
  return out;
}

caf::expected<shard_part> decode_shard_part(const char* data, size_t size) {
  wire::reader r(data, size);
  shard_part p;
  if (!r(p)) return bad("truncated header");
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
