#include "actors/console/http_get.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "actors/console/http_head.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

using clock_type = std::chrono::steady_clock;

int ms_until(clock_type::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
  return static_cast<int>(std::max<long long>(0, left.count()));
}

// Closes the socket on every way out.
struct socket_fd {
  int fd = -1;
  ~socket_fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Connects a non-blocking socket within the timeout: a blocking connect()
// to a host that drops SYNs would wait minutes.
caf::expected<int> connect_within(const addrinfo& ai, std::chrono::milliseconds timeout) {
  socket_fd s{::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol)};
  if (s.fd < 0) return fail(std::strerror(errno));
  if (::connect(s.fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return fail(std::strerror(errno));
    pollfd p{s.fd, POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n == 0) return fail("no connection within " + std::to_string(timeout.count()) + " ms");
    int err = 0;
    socklen_t len = sizeof err;
    if (n < 0 || ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return fail(std::strerror(errno));
    if (err != 0) return fail(std::strerror(err));
  }
  const int fd = s.fd;
  s.fd = -1;
  return fd;
}

caf::error send_all(int fd, std::string_view bytes, clock_type::time_point deadline) {
  while (!bytes.empty()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, ms_until(deadline)) <= 0) return fail("timed out sending the request");
    const auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return fail(std::string("sending the request: ") + std::strerror(errno));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

// Reads until the server closes, within the deadline and the cap.
caf::expected<std::string> read_all(int fd, clock_type::time_point deadline, size_t cap,
                                    std::chrono::milliseconds timeout) {
  std::string out;
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, ms_until(deadline));
    if (ready == 0) return fail("no whole answer within " + std::to_string(timeout.count()) + " ms");
    if (ready < 0) {
      if (errno == EINTR) continue;
      return fail(std::strerror(errno));
    }
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return out;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return fail(std::string("reading the answer: ") + std::strerror(errno));
    }
    if (out.size() + static_cast<size_t>(n) > cap)
      return fail("answer longer than " + std::to_string(cap) + " bytes");
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

caf::expected<http_answer> parse_http_answer(std::string_view bytes) {
  const auto end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return fail("the answer is not HTTP (no end of head)");
  const auto head = bytes.substr(0, end);
  const auto line = head.substr(0, head.find("\r\n"));
  if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12 || line[8] != ' ')
    return fail("the answer is not HTTP/1.x");
  http_answer out;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return fail("the answer has no status code");
    out.status = out.status * 10 + (line[i] - '0');
  }
  out.reason = std::string(line.size() > 13 ? line.substr(13) : std::string_view{});
  out.body = std::string(bytes.substr(end + 4));
  // Content-Length, if sent, says whether the connection closed early.
  if (const auto field = header_field(head, "content-length"); !field.empty()) {
    char* stop = nullptr;
    const std::string text(field);
    const auto length = std::strtoull(text.c_str(), &stop, 10);
    if (*stop != '\0') return fail("the answer has a malformed Content-Length");
    if (out.body.size() < length)
      return fail("the answer was cut short (" + std::to_string(out.body.size()) + " of " +
                  std::to_string(length) + " bytes)");
    out.body.resize(length);
  }
  return out;
}

caf::expected<std::string> http_get(const std::string& host, uint16_t port, const std::string& path,
                                    const http_get_options& opts) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return fail("cannot resolve " + host + ": " + ::gai_strerror(rc));
  caf::expected<int> fd = fail("no address");
  for (auto* ai = found; ai != nullptr; ai = ai->ai_next)
    if ((fd = connect_within(*ai, opts.connect_timeout))) break;
  ::freeaddrinfo(found);
  if (!fd) return fail("cannot connect to " + where + ": " + describe(fd.error()));
  socket_fd s{*fd};
  const auto deadline = clock_type::now() + opts.read_timeout;
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + where +
                              "\r\nUser-Agent: cleave-status\r\nConnection: close\r\n\r\n";
  if (auto err = send_all(s.fd, request, deadline)) return fail(where + ": " + describe(err));
  auto bytes = read_all(s.fd, deadline, opts.max_response_bytes, opts.read_timeout);
  if (!bytes) return fail(where + ": " + describe(bytes.error()));
  auto answer = parse_http_answer(*bytes);
  if (!answer) return fail(where + ": " + describe(answer.error()));
  if (answer->status != 200) {
    auto first = answer->body.substr(0, answer->body.find('\n'));
    return fail(where + " answered " + std::to_string(answer->status) + " " + answer->reason +
                (first.empty() ? "" : ": " + first.substr(0, 200)));
  }
  return std::move(answer->body);
}

}  // namespace cleave
