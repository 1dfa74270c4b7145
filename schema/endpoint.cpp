#include "schema/endpoint.hpp"

#include <cstdlib>

#include "schema/errors.hpp"

namespace cleave {

caf::expected<std::pair<std::string, uint16_t>> parse_endpoint(const std::string& text,
                                                               const std::string& what,
                                                               bool allow_no_host) {
  const auto colon = text.rfind(':');
  std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535 || port_text.size() > 5
      || port_text.find_first_not_of("0123456789") != std::string::npos)
    return fail(what + ": '" + text + "' has no valid port (0-65535)");
  if (host.empty() && !allow_no_host) return fail(what + ": '" + text + "' needs host:port");
  return std::make_pair(host, static_cast<uint16_t>(port));
}

}  // namespace cleave
