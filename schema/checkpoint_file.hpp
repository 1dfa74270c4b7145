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

struct checkpoint {
  model_config model;
  std::string dataset;
  uint64_t seed = 0;
  uint64_t batch = 0;
  uint64_t step = 0;
  uint64_t epoch = 0;
  uint64_t index_in_epoch = 0;
  uint64_t restarts = 0;  // times training was resumed on the way here
  std::vector<parameter_state> parameters;
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

}  // namespace cleave
