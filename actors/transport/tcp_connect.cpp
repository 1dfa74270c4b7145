#include "actors/transport/tcp_connect.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "schema/errors.hpp"

namespace cleave::transport {

namespace {

using clock_type = std::chrono::steady_clock;

// One address: a non-blocking connect, a poll for the rest of the time.
int try_address(const addrinfo* ai, clock_type::time_point deadline, std::string& why) {
  const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    rc = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (rc == 0) {
      why = "no answer within the connect timeout";
      ::close(fd);
      return -1;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    if (rc < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      why = std::strerror(rc < 0 ? errno : err);
      ::close(fd);
      return -1;
    }
  } else if (rc != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

caf::expected<int> connect_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return fail("cannot resolve " + host + ": " + ::gai_strerror(rc));
  const auto deadline = clock_type::now() + timeout;
  std::string why = "no address";
  int fd = -1;
  for (const addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) fd = try_address(ai, deadline, why);
  ::freeaddrinfo(found);
  if (fd < 0) return fail("cannot connect to " + host + ":" + service + ": " + why);
  return fd;
}

}  // namespace cleave::transport
