#pragma once
// Checks shared by the readers of saved training state (checkpoints, a PS
// shard's own checkpoint file): a file on disk is as hostile as a peer. It
// may have been truncated or damaged between runs, shrink while it is read,
// claim more than the machine holds, or carry numbers no training wrote.

#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/error.hpp>

#include "kernels/tensor.hpp"

namespace cleave {

// A checkpoint file is read whole into memory: one larger than this
// machine's physical memory is refused before anything is allocated, with a
// clean error rather than an allocation that fails or a process the kernel
// kills halfway.
caf::error check_readable_size(uint64_t file_bytes, const std::string& path);

// Reads exactly `len` bytes; a file that ends early (truncated or shrinking
// while read) is a "short read" naming `path`, never a partial buffer.
caf::error read_exactly(int fd, char* data, size_t len, const std::string& path);

// Training never writes a NaN or an infinity (a non-finite loss stops it):
// one is damage the checksum could not see (a file re-checksummed, or
// written wrong), and resuming from it would poison every later step.
caf::error check_saved_values(const tensor& value, const tensor& adam_m, const tensor& adam_v, const std::string& what);

}  // namespace cleave
