#pragma once
// The one way a dataset reader opens its file: a regular file (symlinks
// followed), never a directory, FIFO or device, whose size is known before a
// byte is read, so headers can be checked against it.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include <caf/expected.hpp>

namespace cleave {

struct file_closer {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

// The open file and its size in bytes; the error is "cannot open PATH: reason".
caf::expected<std::pair<file_ptr, uint64_t>> open_regular(const std::string& path);

}  // namespace cleave
