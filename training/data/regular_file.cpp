#include "training/data/regular_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "schema/errors.hpp"

namespace cleave {

caf::expected<std::pair<file_ptr, uint64_t>> open_regular(const std::string& path) {
  errno = 0;
  file_ptr f{std::fopen(path.c_str(), "rb")};
  if (!f) return fail("cannot open " + path + ": " + std::strerror(errno ? errno : EIO));
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) != 0)
    return fail("cannot open " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return fail("cannot open " + path + ": " + std::strerror(EISDIR));
  if (!S_ISREG(st.st_mode)) return fail("cannot open " + path + ": not a regular file");
  return std::make_pair(std::move(f), static_cast<uint64_t>(st.st_size));
}

}  // namespace cleave
