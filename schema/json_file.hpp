#pragma once
// JSON files. Reading a small input file (fleet, churn schedule): the size is
// capped before anything is parsed, and every failure names the file.
// Writing a document (the report): atomically, at full precision, so tests
// can compare reported losses across runs exactly.

#include <cstddef>
#include <string>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

namespace cleave {

caf::expected<nlohmann::json> read_json_file(const std::string& path, const char* what,
                                             size_t max_bytes = size_t{1} << 20);

caf::error write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace cleave
