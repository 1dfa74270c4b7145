#include "schema/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include "schema/errors.hpp"

namespace fs = std::filesystem;

namespace cleave {

namespace {

std::string errno_text() { return std::strerror(errno); }

bool write_all(int fd, const char* p, size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

std::string folder_of(const std::string& path) {
  const auto parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

std::string atomic_temporary_of(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp")).string();
}

caf::error write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts,
                                 const char* what) {
  const std::string tmp = atomic_temporary_of(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(std::string("cannot create ") + what + " " + tmp + ": " + errno_text());
  std::string why;
  for (const auto& part : parts)
    if (!write_all(fd, part.data(), part.size())) {
      why = "write failed: " + errno_text();
      break;
    }
  if (why.empty() && ::fsync(fd) != 0) why = "fsync failed: " + errno_text();
  ::close(fd);
  if (!why.empty()) {
    ::unlink(tmp.c_str());
    return fail(std::string("cannot write ") + what + " " + tmp + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto err = fail("cannot rename " + tmp + " to " + path + ": " + errno_text());
    ::unlink(tmp.c_str());
    return err;
  }
  const std::string dir = folder_of(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return fail("cannot open folder " + dir + " of " + what + " " + path + ": " + errno_text());
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return fail("cannot fsync folder " + dir + " of " + what + " " + path + ": " + errno_text());
  return caf::none;
}

}  // namespace cleave
