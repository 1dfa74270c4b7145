#pragma once
// --byzantine=FILE: which devices of the in-process fleet lie, and how.
// Devices are named by fleet index, as in churn files.
//
//   {"liars": [
//     {"device": 3, "lies": [{"kind": "element", "rate": 0.5, "size": 1.0},
//                            {"kind": "stale", "rate": 1}]},
//     {"device": 7, "lies": [{"kind": "nan", "rate": 0.2}]}]}
//
// "rate" defaults to 1, "size" to the kind's default (lies.hpp). Unknown
// keys are refused, so a misspelt "rtae" is not silently a rate of 1.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "actors/device/lies.hpp"

namespace cleave {

using byzantine_fleet = std::map<int32_t, std::vector<lie>>;

// Reads and checks the file: every device in [0, devices), none twice, every
// lie valid. Errors start with the path and name the entry.
caf::expected<byzantine_fleet> byzantine_from_file(const std::string& path, int devices);
// The same from the file's text; `name` (the path) leads every error.
caf::expected<byzantine_fleet> byzantine_from_text(std::string_view text, const std::string& name,
                                                   int devices);

// "2 of 8 emulated devices lie: 3 (element, stale), 7 (nan)", for the log.
std::string describe_byzantine(const byzantine_fleet& liars, int devices);

}  // namespace cleave
