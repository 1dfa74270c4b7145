#pragma once
// The console document (console_view.hpp) in Prometheus' text exposition
// format, version 0.0.4, for `GET /metrics`: one family per account, every
// name prefixed `cleave_`, in base units (seconds, bytes), counters ending
// in `_total`, devices and states as labels. A field the document lacks (no
// training yet, no fleet) leaves its family out rather than reporting a zero
// that never happened.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cleave {

inline constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

std::string render_metrics(const nlohmann::json& console_document);

// A label value as the format quotes it: backslash, double quote and line
// feed escaped.
std::string escape_label_value(std::string_view value);

}  // namespace cleave
