#pragma once
// One page of the console's device table, cut on the server: at a thousand
// devices the whole document is several hundred KiB a second per open page,
// and a browser that rebuilds a thousand rows every second is no longer
// usable. `GET /api/state?page=P&per_page=N&sort=KEY&dir=asc|desc&filter=TEXT`
// answers the document with the fleet's devices (and their accounts) cut to
// the rows the page shows, sorted and filtered here, plus the counts the
// page needs for the rest: rows in all, rows the filter keeps, devices per
// state. Without a query the document is whole, as before (the status
// client and scrapers read it so).
//
// Every parameter comes off the network: each is checked against a short
// list or a range, and anything else is refused with one line.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

namespace cleave {

inline constexpr size_t max_page_query_bytes = 512;
inline constexpr size_t max_rows_per_page = 500;
inline constexpr size_t max_page_filter_bytes = 64;
inline constexpr size_t max_page_number = 1000000;

struct device_page_query {
  size_t page = 0;  // from 0
  size_t per_page = 100;
  std::string sort = "id";  // id, profile, state, tiles, mb_down, mb_up, busy, refused or phi
  bool descending = false;
  std::string filter;  // kept when id, profile or state contains it (lower case)
};

// The query string after `?` (without it). nullopt for an empty query: the
// whole document. Refused: longer than max_page_query_bytes, a parameter
// not listed above or given twice, a number out of range (page past
// max_page_number, per_page outside 1..max_rows_per_page), an unknown sort
// key or direction, a filter longer than max_page_filter_bytes or holding a
// control character, a malformed %-escape.
caf::expected<std::optional<device_page_query>> parse_device_page_query(std::string_view query);

// `doc` (console_view.hpp's document) with "fleet"."devices" and
// "training"."per_device" holding only the page's rows, in the page's order,
// and "fleet"."page": {"page", "per_page", "pages", "total", "matched",
// "sort", "dir", "filter", "states": {state: devices}}. A row is a device
// the fleet lists or the accounts know (the latter alone: state "gone"),
// as the page shows them; a page past the last one is empty.
nlohmann::json page_console_document(nlohmann::json doc, const device_page_query& q);

}  // namespace cleave
