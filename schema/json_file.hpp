#pragma once
// JSON files. Reading a small input file (fleet, churn schedule): the size is
// capped before anything is parsed, and every failure names the file.
// Writing a document (the report): atomically, at full precision, so tests
// can compare reported losses across runs exactly.

#include <cstddef>
#include <string>
#include <string_view>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

namespace cleave {

caf::expected<nlohmann::json> read_json_file(const std::string& path, const char* what,
                                             size_t max_bytes = size_t{1} << 20);

// The two halves of read_json_file, so a file's text can be checked without
// a file (the fuzzers): the capped read, and the parse, whose error starts
// with `name`.
caf::expected<std::string> read_small_file(const std::string& path, const char* what,
                                           size_t max_bytes = size_t{1} << 20);
caf::expected<nlohmann::json> parse_json(std::string_view text, const std::string& name);

caf::error write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace cleave
