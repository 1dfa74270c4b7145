#pragma once
// `cleave --role=status`: the console document (console_view.hpp) as a
// terminal page, a header line for the run and one table row per device.
// Pure, so the page is tested as text.

#include <string>

#include <nlohmann/json.hpp>

namespace cleave {

// The header line: step, loss, model, devices by state, tiles, verified and
// rejected results. Before the first step it says training has not started.
std::string render_status_header(const nlohmann::json& console_document);

// One row per device the fleet or the accounts know, by id: id, profile,
// state, tiles, MB down, MB up, busy % (of the run's seconds), refused, phi.
// A value the document lacks is shown as "-".
std::string render_status_table(const nlohmann::json& console_document);

// Both, header first, each line ending in a line feed.
std::string render_status_page(const nlohmann::json& console_document);

}  // namespace cleave
