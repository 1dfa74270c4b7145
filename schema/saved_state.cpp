#include "schema/saved_state.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <unistd.h>

#include "schema/errors.hpp"

namespace cleave {

caf::error check_readable_size(uint64_t file_bytes, const std::string& path) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return caf::none;  // unknown: the allocation decides
  const uint64_t memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  if (file_bytes > memory)
    return fail(path + ": " + std::to_string(file_bytes) + " bytes, more than this machine's memory ("
                + std::to_string(memory) + " bytes); not read");
  return caf::none;
}

caf::error read_exactly(int fd, char* data, size_t len, const std::string& path) {
  const size_t want = len;
  while (len > 0) {
    const ssize_t n = ::read(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(path + ": read failed: " + std::strerror(errno));
    if (n == 0)
      return fail(path + ": short read: the file ended after " + std::to_string(want - len) + " of "
                  + std::to_string(want) + " bytes (truncated while being read)");
    data += n;
    len -= static_cast<size_t>(n);
  }
  return caf::none;
}

caf::error check_saved_values(const tensor& value, const tensor& adam_m, const tensor& adam_v, const std::string& what) {
  struct part {
    const tensor& t;
    const char* name;
  };
  for (const part& p : {part{value, "values"}, part{adam_m, "AdamW m"}, part{adam_v, "AdamW v"}}) {
    const float* x = p.t.data();
    for (int64_t i = 0; i < p.t.size(); ++i)
      if (!std::isfinite(x[i]))
        return fail(what + ": its " + p.name + " hold " + std::to_string(x[i]) + " at element " + std::to_string(i)
                    + " (training never writes a NaN or an infinity)");
  }
  return caf::none;
}

}  // namespace cleave
