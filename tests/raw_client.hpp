#pragma once
// A plain blocking TCP client on loopback, for tests that play a hostile or
// simple peer against one of our ports.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace cleave::testing {

struct raw_client {
  int fd = -1;
  explicit raw_client(uint16_t port, int timeout_seconds = 10) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd);
      fd = -1;
    }
    timeval tv{timeout_seconds, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~raw_client() {
    if (fd >= 0) ::close(fd);
  }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;
  bool write_all(const void* p, size_t n) {
    auto c = static_cast<const char*>(p);
    while (n > 0) {
      auto w = ::send(fd, c, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      c += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  bool write_all(const std::string& s) { return write_all(s.data(), s.size()); }
  // Reads exactly n bytes; false on close, error or timeout.
  bool read_exact(void* p, size_t n) {
    auto c = static_cast<char*>(p);
    while (n > 0) {
      auto r = ::recv(fd, c, n, 0);
      if (r <= 0) return false;
      c += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  // Reads until the server closes (true) or the timeout passes (false);
  // what arrived meanwhile is kept in `received`.
  bool sees_close() {
    char buf[4096];
    for (;;) {
      auto r = ::recv(fd, buf, sizeof(buf), 0);
      if (r == 0) return true;
      if (r < 0) return errno == ECONNRESET;
      received.append(buf, static_cast<size_t>(r));
    }
  }
  std::string received;
};

}  // namespace cleave::testing
