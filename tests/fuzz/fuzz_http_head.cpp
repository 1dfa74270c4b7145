// The admin console's request head (actors/console/http_head.hpp), read
// from whoever connects to the console's port.
#include <string_view>

#include "actors/console/http_head.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto head = parse_http_head(bytes);
  const auto end = bytes.find("\r\n\r\n");
  if (!head) return 0;
  if (!*head) {
    // Incomplete: only while no head end has arrived and the cap is not reached.
    FUZZ_CHECK(end == std::string_view::npos && size < max_http_head_bytes);
    return 0;
  }
  const http_head& h = **head;
  FUZZ_CHECK(end != std::string_view::npos && end + 4 <= max_http_head_bytes);
  FUZZ_CHECK(!h.method.empty() && h.method.size() <= 16);
  FUZZ_CHECK(!h.path.empty() && h.path[0] == '/' && h.path.find('?') == std::string::npos);
  FUZZ_CHECK(h.path.find("\r\n") == std::string::npos);
  // More bytes after the head do not change it.
  auto longer = parse_http_head(std::string(bytes) + "x");
  FUZZ_CHECK(longer && *longer && (*longer)->method == h.method && (*longer)->path == h.path);
  return 0;
}
