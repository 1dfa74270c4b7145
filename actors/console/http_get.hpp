#pragma once
// The console's client side, for `cleave --role=status`: one blocking GET
// over plain TCP, bounded in every way a console on the other side could
// misbehave (slow to accept, slow to answer, answering without end).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace cleave {

struct http_get_options {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{5000};  // for the whole answer, from the request
  size_t max_response_bytes = size_t{4} << 20;
};

struct http_answer {
  int status = 0;
  std::string reason;
  std::string body;
};

// A whole response (the server closed the connection after it): status line
// and body; a Content-Length the body falls short of is an error.
caf::expected<http_answer> parse_http_answer(std::string_view bytes);

// GETs `path` from host:port and returns the body of a 200 answer; anything
// else is an error of one line naming host:port.
caf::expected<std::string> http_get(const std::string& host, uint16_t port, const std::string& path,
                                    const http_get_options& opts = {});

}  // namespace cleave
