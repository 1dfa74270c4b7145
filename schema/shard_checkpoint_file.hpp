#pragma once
// A PS shard process's own checkpoint: its slice of every parameter (value
// and both AdamW moments) with the slice's geometry, so that a coordinator
// with another shard count can put whole tensors together from a set of
// them. One file per (step, shard index, shard count):
// `shard-<step:10>-<index:02>-of-<count:02>.clvshard`.
//
//   offset 0  8 bytes  magic "CLVSHCK\0"
//          8  u32      format version (1)
//         12  u32      shard index
//         16  u32      shard count (1 to 64)
//         20  u32      CRC-32 of bytes 0-19 and 24 to the end
//         24  u64      step
//         32  u64      set id (the coordinator's, one per checkpoint)
//         40  u64      payload length
//         48  payload  the slices, laid out as an attach frame
//                      (schema/shard_codec.hpp: count, then per parameter
//                      axis, decay, full shape, range, value, m, v)
//
// Written as every checkpoint is (schema/atomic_file.hpp). The reader
// treats the file as hostile: header, length against the file's size and
// checksum are checked before the payload is decoded, and the payload's
// decoder checks every count and shape against its caps and the bytes left
// before it sizes anything.
//
// Also the payloads of the two requests that drive these files
// (shard_kind::checkpoint and shard_kind::restore) and of the answer to the
// first.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "schema/checkpoint_file.hpp"
#include "schema/shard_codec.hpp"

namespace cleave {

inline constexpr uint32_t max_checkpoint_shards = 64;

struct shard_checkpoint_header {
  uint32_t shard = 0;
  uint32_t shards = 0;
  uint64_t step = 0;
  uint64_t set_id = 0;
};

// One slice as a shard writes it: views of tensors it keeps (no copy).
struct shard_checkpoint_slice {
  uint8_t axis = 0;
  bool decay = false;
  int64_t full_rows = 0, full_cols = 0;
  int64_t begin = 0, end = 0;
  const tensor* value = nullptr;
  const tensor* adam_m = nullptr;
  const tensor* adam_v = nullptr;
};

struct shard_checkpoint_data {
  shard_checkpoint_header header;
  shard_file_ref file;  // name (without folder), checksum, bytes
  std::vector<shard_attach_entry> slices;
};

std::string shard_checkpoint_name(uint64_t step, uint32_t shard, uint32_t shards);

// The sets whose coordinator file is on disk, at most this many of them, are
// named in a checkpoint request (the coordinator keeps two).
inline constexpr uint32_t max_kept_sets = 8;

// Writes dir/shard_checkpoint_name(...) atomically and deletes temporaries a
// killed writer left. Of this shard's other files (same index and count;
// other shards' files in a shared directory are not touched) it keeps, with
// `kept_steps`, the files of those steps alone, and deletes the rest before
// writing: they belong to sets no coordinator file names (a set whose
// checkpoint failed), and a full disk may need their room. Without it, the
// newest three, after writing (so the newest complete set survives a crash
// at any moment while the coordinator keeps two).
caf::expected<shard_file_ref> write_shard_checkpoint(const std::string& dir, const shard_checkpoint_header& h,
                                                     const std::vector<shard_checkpoint_slice>& slices,
                                                     const std::optional<std::vector<uint64_t>>& kept_steps = {});

caf::expected<shard_checkpoint_data> read_shard_checkpoint(const std::string& path);
// The same checks on bytes in memory; `name` leads every error. The fuzzer's entry.
caf::expected<shard_checkpoint_data> read_shard_checkpoint_bytes(const char* data, size_t size,
                                                                 const std::string& name);

// checkpoint request: write this shard's slices as shard `shard` of `shards`
// at `step`. A tail a later version appended names the steps of the sets
// the coordinator's files on disk hold (kept_steps above); a frame without
// it (an older coordinator) keeps the newest three.
struct shard_checkpoint_request {
  shard_checkpoint_header header;
  bool listed = false;  // the tail is there
  std::vector<uint64_t> kept_steps;
};
std::vector<char> encode(const shard_checkpoint_request& q);
caf::expected<shard_checkpoint_request> decode_shard_checkpoint_request(const char* data, size_t size);

// The answer: the file written.
std::vector<char> encode(const shard_file_ref& f);
caf::expected<shard_file_ref> decode_shard_file_ref(const char* data, size_t size);

// restore request: load the named file, which must be this header's and
// carry this checksum and size, and whose slices must have this geometry
// (axis, full shape, range per parameter: the coordinator's own cut).
struct shard_slice_geometry {
  uint8_t axis = 0;
  int64_t full_rows = 0, full_cols = 0;
  int64_t begin = 0, end = 0;
  bool operator==(const shard_slice_geometry& o) const {
    return axis == o.axis && full_rows == o.full_rows && full_cols == o.full_cols && begin == o.begin && end == o.end;
  }
};
struct shard_restore_request {
  shard_checkpoint_header header;
  shard_file_ref file;
  std::vector<shard_slice_geometry> slices;
};
std::vector<char> encode(const shard_restore_request& r);
caf::expected<shard_restore_request> decode_shard_restore_request(const char* data, size_t size);

}  // namespace cleave
