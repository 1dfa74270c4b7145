#pragma once
// Checkpoint files: a fixed header, then a Cap'n Proto Checkpoint message.
//
//   offset 0  8 bytes  magic "CLVCKPT\0"
//          8  u32      format version (1)
//         12  u32      CRC-32 of the payload
//         16  u64      payload length in bytes (a multiple of 8)
//         24  payload  flat Cap'n Proto message (schema/checkpoint.capnp)
//
// Writes are atomic: a temporary file in the same directory is written,
// fsync'd and renamed over the final name, then the directory is fsync'd, so
// a crash at any instant leaves the previous checkpoint intact. Readers check
// the header, length and CRC before trusting a byte.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "kernels/tensor.hpp"
#include "schema/model_config.hpp"

namespace cleave {

struct parameter_state {
  std::string name;
  tensor value;
  tensor adam_m;
  tensor adam_v;
};

// A shard process's checkpoint file as the coordinator's names it.
struct shard_file_ref {
  std::string name;  // in the shard's --checkpoint-dir, without the folder
  uint32_t checksum = 0;  // the CRC-32 in its header
  uint64_t bytes = 0;     // its size
};

// With PS shard processes the AdamW moments are in the shards' own files:
// the coordinator's checkpoint names them (count 0: no shard files, the
// moments are in `parameters`). The coordinator writes its file after every
// shard answered, so a set is complete iff this file exists and every file
// it names does, with that checksum.
struct shard_set {
  uint32_t count = 0;
  uint64_t id = 0;
  std::vector<shard_file_ref> files;  // by shard index
};

struct checkpoint {
  model_config model;
  std::string dataset;
  uint64_t seed = 0;
  uint64_t batch = 0;
  uint64_t step = 0;
  uint64_t epoch = 0;
  uint64_t index_in_epoch = 0;
  uint64_t restarts = 0;  // times training was resumed on the way here
  std::vector<parameter_state> parameters;  // moments 0x0 when `shards` holds them
  shard_set shards;
};

// Writes dir/checkpoint-<step>.clvck atomically and then deletes all but the
// newest `keep` checkpoints in dir. Creates dir if needed.
caf::expected<std::string> write_checkpoint(const std::string& dir, const checkpoint& ck,
                                            int keep = 2);

caf::expected<checkpoint> read_checkpoint(const std::string& path);

// What read_checkpoint does once the file is in memory: the same checks in
// the same order, `name` (the path) leading every error. The fuzzer's entry.
caf::expected<checkpoint> read_checkpoint_bytes(const char* data, size_t size,
                                                const std::string& name = "checkpoint");

// Checkpoint files in dir, newest (highest step) first. Missing dir: empty.
std::vector<std::string> list_checkpoints(const std::string& dir);
// The steps of list_checkpoints(dir)'s files, newest first, at most `most`.
std::vector<uint64_t> checkpoint_steps(const std::string& dir, size_t most = 8);

}  // namespace cleave
