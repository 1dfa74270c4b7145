#include "actors/console/status_table.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace cleave {

namespace {

using nlohmann::json;

constexpr const char* states[] = {"alive", "suspected", "dead", "quarantined", "draining"};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// `obj[key]` as text, "-" when it is not there or not a number.
std::string num(const json& obj, const char* key, int decimals = 0, double scale = 1) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return "-";
  if (decimals == 0 && scale == 1 && obj[key].is_number_integer()) return obj[key].dump();
  return fixed(obj[key].get<double>() * scale, decimals);
}

std::string text(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return "-";
  return obj[key].is_string() ? obj[key].get<std::string>() : obj[key].dump();
}

struct device_row {
  json fleet = json::object();     // fleet.devices[i]: profile, state, phi
  json accounts = json::object();  // training.per_device[i]: tiles, bytes, busy, refused
};

std::map<long long, device_row> rows_of(const json& doc) {
  std::map<long long, device_row> rows;
  if (!doc.is_object()) return rows;
  auto each = [&](const json& list, json device_row::*part) {
    if (!list.is_array()) return;
    for (const auto& d : list)
      if (d.is_object() && d.contains("id") && d["id"].is_number_integer())
        rows[d["id"].get<long long>()].*part = d;
  };
  const auto& fleet = doc.value("fleet", json());
  const auto& training = doc.value("training", json());
  if (fleet.is_object()) each(fleet.value("devices", json()), &device_row::fleet);
  if (training.is_object()) each(training.value("per_device", json()), &device_row::accounts);
  return rows;
}

}  // namespace

std::string render_status_header(const json& doc) {
  const auto& training = doc.is_object() ? doc.value("training", json()) : json();
  std::map<std::string, int> by_state;
  for (const auto& [id, row] : rows_of(doc))
    if (row.fleet.contains("state")) ++by_state[text(row.fleet, "state")];
  std::string devices = "devices";
  for (const char* s : states) devices += std::string(s == states[0] ? " " : "/") + std::to_string(by_state[s]);
  devices += " alive/suspected/dead/quarantined/draining";
  if (!training.is_object()) return "training not started  " + devices;
  return "step " + num(training, "step") + "  loss " + num(training, "loss", 4) + "  model " +
         text(training, "model") + "  " + devices + "  tiles " + num(training, "tiles") +
         "  verified " + num(training, "tiles_verified") + "  rejected " + num(training, "tiles_rejected");
}

std::string render_status_table(const json& doc) {
  const auto& training = doc.is_object() ? doc.value("training", json()) : json();
  const double seconds = training.is_object() && training.value("seconds", json()).is_number()
                           ? training["seconds"].get<double>()
                           : 0;
  std::vector<std::vector<std::string>> cells = {
    {"id", "profile", "state", "tiles", "MB down", "MB up", "busy %", "refused", "phi"}};
  for (const auto& [id, row] : rows_of(doc)) {
    const auto& a = row.accounts;
    std::string profile = text(row.fleet, "profile");
    if (profile == "-") profile = text(a, "profile");
    std::string busy = "-";
    if (seconds > 0 && a.value("busy_seconds", json()).is_number())
      busy = fixed(100 * a["busy_seconds"].get<double>() / seconds, 1);
    cells.push_back({std::to_string(id), profile, text(row.fleet, "state"), num(a, "tiles"),
                     num(a, "bytes_down", 1, 1e-6), num(a, "bytes_up", 1, 1e-6), busy,
                     num(a, "refused"), num(row.fleet, "phi", 2)});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& r : cells)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const auto& r : cells) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      if (c > 0) line += "  ";
      // Names to the left, numbers to the right, as a reader scans them.
      line += c == 1 || c == 2 ? r[c] + pad : pad + r[c];
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + '\n';
  }
  return out;
}

std::string render_status_page(const json& doc) {
  return render_status_header(doc) + "\n" + render_status_table(doc);
}

}  // namespace cleave
