#pragma once
// The admin console speaks just enough HTTP/1.x for curl and a browser: one
// request per connection, answered and closed. The request head is capped
// before anything is kept for it, and so is a body (the controls' POSTs need
// none); a head that does not fit, or is not HTTP, is refused.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace cleave {

inline constexpr size_t max_http_head_bytes = 8192;
inline constexpr size_t max_http_body_bytes = 1024;

struct http_head {
  std::string method;
  std::string path;  // without a query string
  size_t size = 0;   // bytes of the head, its blank line included
  std::string authorization;  // the Authorization field's value, if sent
  size_t content_length = 0;  // 0 when not sent
  bool chunked = false;       // a Transfer-Encoding was sent: refused, a body must have a length
  std::string query;          // after the `?`, undecoded (bounded by the head's cap)
};

// The head at the start of `bytes`: nullopt while it is incomplete (read
// more), an error when it is malformed or longer than max_http_head_bytes,
// or its Content-Length is not a number.
caf::expected<std::optional<http_head>> parse_http_head(std::string_view bytes);

// A whole HTTP/1.1 response that closes the connection.
std::string http_response(int status, std::string_view content_type, std::string_view body);

// The value of header field `name` (case-insensitive) in `head` (the lines
// after the request line), spaces trimmed; empty when absent.
std::string_view header_field(std::string_view head, std::string_view name);

}  // namespace cleave
