#pragma once
// A request or answer between a coordinator and a PS shard process that is
// larger than one frame may carry (the bulk channel's 256 MiB) travels as
// parts (schema/shard_codec.hpp's `part` kind): each part says the kind of
// the whole message, its total length and where the part's bytes go. So a
// shard can hold any slice that fits its memory.
//
//   a request in parts:  part, part, ... (each answered `done` until the
//                        last, which is answered as the whole request)
//   an answer in parts:  the shard answers `part`; the coordinator asks
//                        `next_part` for each of the others
//
// A receiver takes parts only in order, from offset 0, without gaps or
// overlaps, all naming the same kind and total, and the total within
// max_shard_message_bytes. Its buffer grows with the bytes that arrived,
// never with what a part claims, so a lying part costs at most its own
// (already capped) frame.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace cleave {

// The largest whole message in parts (a shard's slices of a 30B-parameter
// model with both moments fit: 3 x 4 x 30e9 / S bytes for S >= 6).
inline constexpr uint64_t max_shard_message_bytes = uint64_t{64} << 30;
// Bytes of a message per part: well below the channel's 256 MiB frame cap,
// and small beside a model, since each end keeps about a part per connection
// in its buffers (a coordinator with S shards, S of them at once), yet large
// enough that the round trip a part costs is nothing beside its bytes.
inline constexpr uint64_t shard_part_bytes = uint64_t{16} << 20;
inline constexpr size_t shard_part_header_bytes = 2 + 8 + 8;  // kind, total, offset

struct shard_part {
  uint16_t kind = 0;    // the whole message's kind
  uint64_t total = 0;   // the whole message's length
  uint64_t offset = 0;  // where this part's bytes go
  const char* data = nullptr;
  size_t size = 0;
};

// The part of `whole` (of `kind`) that starts at `offset`: at most part_bytes of it.
std::vector<char> encode_shard_part(uint16_t kind, const std::vector<char>& whole, uint64_t offset,
                                    uint64_t part_bytes = shard_part_bytes);
// A part frame from `offset` of a `total`-byte message with room for n
// bytes after its header, which the caller fills (from a message it never
// holds whole, schema/shard_gathered.hpp).
std::vector<char> shard_part_frame(uint16_t kind, uint64_t total, uint64_t offset, uint64_t n);
// A part's header, checked on its own (the bytes point into `data`).
caf::expected<shard_part> decode_shard_part(const char* data, size_t size);

// Puts one message back together from its parts.
class shard_part_assembler {
 public:
  // Takes the next part, or says why it does not follow the ones before it
  // (then the message is dropped: the next part must start a new one).
  caf::error add(const shard_part& part);
  bool started() const { return started_; }
  bool complete() const { return started_ && bytes_.size() == total_; }
  uint16_t kind() const { return kind_; }
  // The bytes its buffer holds room for (at most twice those that arrived).
  size_t buffered() const { return bytes_.capacity(); }
  // The whole message once complete(); the assembler is empty again.
  std::vector<char> take();
  void reset();

 private:
  bool started_ = false;
  uint16_t kind_ = 0;
  uint64_t total_ = 0;
  std::vector<char> bytes_;
};

}  // namespace cleave
