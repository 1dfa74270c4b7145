#include "actors/console/http_head.hpp"

#include <cctype>
#include <cstdlib>

#include "schema/errors.hpp"

namespace cleave {

namespace {

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

bool is_token(std::string_view s) {
  if (s.empty() || s.size() > 16) return false;
  for (char c : s)
    if (c < 'A' || c > 'Z') return false;
  return true;
}

bool same_letters(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

std::string_view header_field(std::string_view head, std::string_view name) {
  for (size_t at = head.find("\r\n"); at != std::string_view::npos;) {
    const auto next = head.find("\r\n", at + 2);
    auto field = head.substr(at + 2, next == std::string_view::npos ? std::string_view::npos : next - at - 2);
    at = next;
    const auto colon = field.find(':');
    if (colon == std::string_view::npos || !same_letters(field.substr(0, colon), name)) continue;
    auto value = field.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    return value;
  }
  return {};
}

caf::expected<std::optional<http_head>> parse_http_head(std::string_view bytes) {
  const auto end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (bytes.size() >= max_http_head_bytes)
      return fail("request head longer than " + std::to_string(max_http_head_bytes) + " bytes");
    return std::optional<http_head>{};
  }
  if (end + 4 > max_http_head_bytes)
    return fail("request head longer than " + std::to_string(max_http_head_bytes) + " bytes");
  const std::string_view line = bytes.substr(0, bytes.find("\r\n"));
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail("malformed request line");
  const auto method = line.substr(0, sp1);
  auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto version = line.substr(sp2 + 1);
  if (!is_token(method)) return fail("malformed method");
  if (version != "HTTP/1.0" && version != "HTTP/1.1") return fail("not HTTP/1.0 or HTTP/1.1");
  if (target.empty() || target.front() != '/') return fail("the target is not a path");
  const auto mark = target.find('?');
  http_head out;
  out.method = std::string(method);
  out.path = std::string(target.substr(0, mark));
  out.size = end + 4;
  if (mark != std::string_view::npos) out.query = std::string(target.substr(mark + 1));
  const auto fields = bytes.substr(0, end);
  out.authorization = std::string(header_field(fields, "authorization"));
  out.chunked = !header_field(fields, "transfer-encoding").empty();
  if (const auto length = header_field(fields, "content-length"); !length.empty()) {
    const std::string text(length);
    char* stop = nullptr;
    const auto n = std::strtoull(text.c_str(), &stop, 10);
    if (text.front() < '0' || text.front() > '9' || *stop != '\0' || text.size() > 18)
      return fail("malformed Content-Length");
    out.content_length = static_cast<size_t>(n);
  }
  return std::optional<http_head>{std::move(out)};
}

std::string http_response(int status, std::string_view content_type, std::string_view body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
  out += "Content-Type: ";
  out += content_type;
  out += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
  out += body;
  return out;
}

}  // namespace cleave
