#include "schema/json_file.hpp"

#include <fstream>
#include <iterator>

#include "schema/atomic_file.hpp"
#include "schema/errors.hpp"

namespace cleave {

caf::expected<std::string> read_small_file(const std::string& path, const char* what,
                                           size_t max_bytes) {
  std::ifstream in(path);
  if (!in) return fail(std::string{"cannot open "} + what + " " + path);
  in.seekg(0, std::ios::end);
  if (in.tellg() < 0 || static_cast<size_t>(in.tellg()) > max_bytes)
    return fail(path + ": " + what + " larger than " + std::to_string(max_bytes >> 10) + " KiB");
  in.seekg(0);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

caf::expected<nlohmann::json> parse_json(std::string_view text, const std::string& name) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return fail(name + ": not valid JSON");
  return doc;
}

caf::expected<nlohmann::json> read_json_file(const std::string& path, const char* what,
                                             size_t max_bytes) {
  auto text = read_small_file(path, what, max_bytes);
  if (!text) return text.error();
  return parse_json(*text, path);
}

caf::error write_json_file(const std::string& path, const nlohmann::json& doc) {
  const std::string text = doc.dump(2) + "\n";
  return write_file_atomically(path, {text}, "report");
}

}  // namespace cleave
