#pragma once
// The admin console speaks just enough HTTP/1.x for curl and a browser: one
// GET per connection, answered and closed. The request head is capped before
// anything is kept for it; a head that does not fit, or is not HTTP, is
// refused.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace cleave {

inline constexpr size_t max_http_head_bytes = 8192;

struct http_head {
  std::string method;
  std::string path;  // without a query string
};

// The head at the start of `bytes`: nullopt while it is incomplete (read
// more), an error when it is malformed or longer than max_http_head_bytes.
caf::expected<std::optional<http_head>> parse_http_head(std::string_view bytes);

// A whole HTTP/1.1 response that closes the connection.
std::string http_response(int status, std::string_view content_type, std::string_view body);

}  // namespace cleave
