#include "schema/json_file.hpp"

#include <fstream>

#include "schema/atomic_file.hpp"
#include "schema/errors.hpp"

namespace cleave {

caf::expected<nlohmann::json> read_json_file(const std::string& path, const char* what,
                                             size_t max_bytes) {
  std::ifstream in(path);
  if (!in) return fail(std::string{"cannot open "} + what + " " + path);
  in.seekg(0, std::ios::end);
  if (in.tellg() < 0 || static_cast<size_t>(in.tellg()) > max_bytes)
    return fail(path + ": " + what + " larger than " + std::to_string(max_bytes >> 10) + " KiB");
  in.seekg(0);
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded()) return fail(path + ": not valid JSON");
  return doc;
}

caf::error write_json_file(const std::string& path, const nlohmann::json& doc) {
  const std::string text = doc.dump(2) + "\n";
  return write_file_atomically(path, {text}, "report");
}

}  // namespace cleave
