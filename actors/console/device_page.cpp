#include "actors/console/device_page.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <variant>
#include <vector>

#include "schema/errors.hpp"

namespace cleave {

namespace {

using nlohmann::json;

constexpr const char* sort_keys[] = {"id", "tiles", "profile", "state", "mb_down",
                                     "mb_up", "busy", "refused", "phi"};

caf::expected<std::string> percent_decode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%') {
      if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(in[i + 2])))
        return fail("a malformed %-escape in the query");
      out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

// A decimal in [lo, hi]; digits only, so "-1", "1e3" and "0x10" are refused.
caf::expected<size_t> bounded(const std::string& name, const std::string& text, size_t lo, size_t hi) {
  const auto refused = fail(name + " must be a whole number in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]");
  if (text.empty() || text.size() > 7) return refused;
  size_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return refused;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  if (v < lo || v > hi) return refused;
  return v;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A row as the page shows it: the fleet's entry and the accounts', and the
// value it is sorted by (a number, a text, or nothing: shown "-", last).
struct row {
  long long id = 0;
  const json* fleet = nullptr;
  const json* accounts = nullptr;
  std::string profile, state;
  std::variant<std::monostate, double, std::string> key;
};

std::optional<double> number(const json* obj, const char* field) {
  if (obj == nullptr || !obj->is_object()) return std::nullopt;
  const auto it = obj->find(field);
  if (it == obj->end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string text(const json* obj, const char* field) {
  if (obj == nullptr || !obj->is_object()) return {};
  const auto it = obj->find(field);
  return it != obj->end() && it->is_string() ? it->get<std::string>() : std::string{};
}

void set_key(row& r, const std::string& sort, double run_seconds) {
  auto num = [&](std::optional<double> v, double scale = 1) {
    if (v) r.key = *v * scale;
  };
  if (sort == "id") r.key = static_cast<double>(r.id);
  else if (sort == "profile") r.key = r.profile;
  else if (sort == "state") r.key = r.state;
  else if (sort == "tiles") num(number(r.accounts, "tiles"));
  else if (sort == "mb_down") num(number(r.accounts, "bytes_down"), 1e-6);
  else if (sort == "mb_up") num(number(r.accounts, "bytes_up"), 1e-6);
  else if (sort == "refused") num(number(r.accounts, "refused"));
  else if (sort == "phi") num(number(r.fleet, "phi"));
  else if (sort == "busy" && run_seconds > 0) num(number(r.accounts, "busy_seconds"), 100 / run_seconds);
}

}  // namespace

caf::expected<std::optional<device_page_query>> parse_device_page_query(std::string_view query) {
  if (query.empty()) return std::optional<device_page_query>{};
  if (query.size() > max_page_query_bytes)
    return fail("the query is longer than " + std::to_string(max_page_query_bytes) + " bytes");
  device_page_query q;
  std::set<std::string> seen;
  for (size_t at = 0; at <= query.size();) {
    const size_t end = std::min(query.find('&', at), query.size());
    const auto pair = query.substr(at, end - at);
    at = end + 1;
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq));
    auto value = percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1));
    if (!name) return name.error();
    if (!value) return value.error();
    if (!seen.insert(*name).second) return fail("the query names " + *name + " twice");
    if (*name == "page") {
      auto v = bounded("page", *value, 0, max_page_number);
      if (!v) return v.error();
      q.page = *v;
    } else if (*name == "per_page") {
      auto v = bounded("per_page", *value, 1, max_rows_per_page);
      if (!v) return v.error();
      q.per_page = *v;
    } else if (*name == "sort") {
      if (std::find(std::begin(sort_keys), std::end(sort_keys), *value) == std::end(sort_keys))
        return fail("sort must be id, profile, state, tiles, mb_down, mb_up, busy, refused or phi");
      q.sort = *value;
    } else if (*name == "dir") {
      if (*value != "asc" && *value != "desc") return fail("dir must be asc or desc");
      q.descending = *value == "desc";
    } else if (*name == "filter") {
      if (value->size() > max_page_filter_bytes)
        return fail("filter is longer than " + std::to_string(max_page_filter_bytes) + " bytes");
      for (unsigned char c : *value)
        if (c < 0x20 || c == 0x7f) return fail("filter holds a control character");
      q.filter = lower(*value);
    } else {
      // Shown back only when short and plain: the name is the client's.
      const bool plain = name->size() <= 32 && std::all_of(name->begin(), name->end(), [](unsigned char c) {
                           return std::isalnum(c) || c == '_';
                         });
      return fail("unknown query parameter" + (plain ? " " + *name : std::string{}) +
                  " (page, per_page, sort, dir, filter)");
    }
  }
  return std::optional<device_page_query>{std::move(q)};
}

json page_console_document(json doc, const device_page_query& q) {
  if (!doc.is_object()) return doc;
  json& fleet = doc["fleet"];
  if (!fleet.is_object()) fleet = json::object();
  json& training = doc["training"];  // null before the first step
  const double run_seconds = number(&training, "seconds").value_or(0);

  std::map<long long, row> by_id;
  auto take = [&](const json& list, const json* row::*part) {
    if (!list.is_array()) return;
    for (const auto& d : list)
      if (d.is_object() && d.contains("id") && d["id"].is_number_integer()) {
        auto& r = by_id[d["id"].get<long long>()];
        r.id = d["id"].get<long long>();
        r.*part = &d;
      }
  };
  if (fleet.contains("devices")) take(fleet["devices"], &row::fleet);
  if (training.is_object() && training.contains("per_device")) take(training["per_device"], &row::accounts);

  std::map<std::string, size_t> states;
  std::vector<row*> kept;
  for (auto& [id, r] : by_id) {
    r.profile = text(r.fleet, "profile");
    if (r.profile.empty()) r.profile = text(r.accounts, "profile");
    r.state = r.fleet != nullptr ? text(r.fleet, "state") : "gone";
    ++states[r.state];
    if (!q.filter.empty()) {
      const bool found = std::to_string(id).find(q.filter) != std::string::npos ||
                         lower(r.profile).find(q.filter) != std::string::npos ||
                         lower(r.state).find(q.filter) != std::string::npos;
      if (!found) continue;
    }
    set_key(r, q.sort, run_seconds);
    kept.push_back(&r);
  }
  // Rows without the value go last either way; equal ones by id, as the
  // page has always shown them.
  std::stable_sort(kept.begin(), kept.end(), [&](const row* a, const row* b) {
    const bool a_none = std::holds_alternative<std::monostate>(a->key);
    const bool b_none = std::holds_alternative<std::monostate>(b->key);
    if (a_none || b_none) return !a_none && b_none;
    if (a->key == b->key) return false;  // stable: already by id
    return q.descending ? b->key < a->key : a->key < b->key;
  });

  const size_t first = std::min(kept.size(), q.page * q.per_page);
  const size_t last = std::min(kept.size(), first + q.per_page);
  json devices = json::array(), accounts = json::array(), ids = json::array();
  for (size_t i = first; i < last; ++i) {
    ids.push_back(kept[i]->id);
    if (kept[i]->fleet != nullptr) devices.push_back(*kept[i]->fleet);
    if (kept[i]->accounts != nullptr) accounts.push_back(*kept[i]->accounts);
  }
  json page = {{"page", q.page},
               {"per_page", q.per_page},
               {"pages", (kept.size() + q.per_page - 1) / q.per_page},
               {"total", by_id.size()},
               {"matched", kept.size()},
               {"sort", q.sort},
               {"dir", q.descending ? "desc" : "asc"},
               {"filter", q.filter},
               {"states", states},
               {"ids", std::move(ids)}};
  // The pointers above point into these lists: replace them last.
  fleet["devices"] = std::move(devices);
  if (training.is_object() && training.contains("per_device")) training["per_device"] = std::move(accounts);
  fleet["page"] = std::move(page);
  return doc;
}

}  // namespace cleave
