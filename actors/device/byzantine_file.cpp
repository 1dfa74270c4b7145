#include "actors/device/byzantine_file.hpp"

#include <initializer_list>

#include "schema/errors.hpp"
#include "schema/json_file.hpp"

namespace cleave {

namespace {

// The first key of `obj` not in `allowed`, or "".
std::string unknown_key(const nlohmann::json& obj, std::initializer_list<const char*> allowed) {
  for (const auto& item : obj.items()) {
    bool known = false;
    for (const char* a : allowed) known |= item.key() == a;
    if (!known) return item.key();
  }
  return "";
}

caf::expected<lie> read_lie(const nlohmann::json& e, const std::string& where) {
  if (!e.is_object()) return fail(where + ": expected an object");
  if (auto key = unknown_key(e, {"kind", "rate", "size"}); !key.empty())
    return fail(where + ": unknown key \"" + key + "\" (expected kind, rate, size)");
  if (!e.contains("kind") || !e["kind"].is_string())
    return fail(where + ": kind must be a string");
  auto kind = parse_lie_kind(e["kind"].get<std::string>());
  if (!kind) return fail(where + ": " + describe(kind.error()));
  lie l{*kind};
  for (auto [key, field] : {std::pair{"rate", &l.rate}, {"size", &l.size}}) {
    if (!e.contains(key)) continue;
    if (!e[key].is_number()) return fail(where + ": " + key + " must be a number");
    *field = e[key].get<double>();
  }
  if (auto err = check_lie(l)) return fail(where + ": " + describe(err));
  return l;
}

}  // namespace

caf::expected<byzantine_fleet> byzantine_from_file(const std::string& path, int devices) {
  auto text = read_small_file(path, "byzantine file");
  if (!text) return text.error();
  return byzantine_from_text(*text, path, devices);
}

caf::expected<byzantine_fleet> byzantine_from_text(std::string_view text, const std::string& path,
                                                   int devices) {
  auto parsed = parse_json(text, path);
  if (!parsed) return parsed.error();
  const auto& doc = *parsed;
  if (!doc.is_object() || !doc.contains("liars") || !doc["liars"].is_array())
    return fail(path + ": expected an object with a \"liars\" array");
  if (auto key = unknown_key(doc, {"liars"}); !key.empty())
    return fail(path + ": unknown key \"" + key + "\" (expected liars)");
  byzantine_fleet out;
  size_t index = 0;
  for (const auto& d : doc["liars"]) {
    const std::string where = path + ": liars[" + std::to_string(index++) + "]";
    if (!d.is_object()) return fail(where + ": expected an object");
    if (auto key = unknown_key(d, {"device", "lies"}); !key.empty())
      return fail(where + ": unknown key \"" + key + "\" (expected device, lies)");
    if (!d.contains("device") || !d["device"].is_number_integer())
      return fail(where + ": device must be an integer fleet index");
    const auto dev = d["device"].get<int64_t>();
    if (dev < 0 || dev >= devices)
      return fail(where + ": device " + std::to_string(dev) + " is not in the fleet [0, "
                  + std::to_string(devices) + ")");
    if (out.count(static_cast<int32_t>(dev)) != 0)
      return fail(where + ": device " + std::to_string(dev) + " is listed twice");
    if (!d.contains("lies") || !d["lies"].is_array() || d["lies"].empty())
      return fail(where + ": lies must be a non-empty array");
    std::vector<lie> lies;
    size_t li = 0;
    for (const auto& e : d["lies"]) {
      const std::string at = where + ".lies[" + std::to_string(li++) + "]";
      auto l = read_lie(e, at);
      if (!l) return l.error();
      for (const auto& other : lies)
        if (other.kind == l->kind) return fail(at + ": kind " + to_string(l->kind) + " given twice");
      lies.push_back(*l);
    }
    out.emplace(static_cast<int32_t>(dev), std::move(lies));
  }
  return out;
}

std::string describe_byzantine(const byzantine_fleet& liars, int devices) {
  std::string out = std::to_string(liars.size()) + " of " + std::to_string(devices)
                    + " emulated devices lie:";
  bool first = true;
  for (const auto& [dev, lies] : liars) {
    out += first ? " " : ", ";
    first = false;
    out += std::to_string(dev) + " (";
    for (size_t i = 0; i < lies.size(); ++i)
      out += (i ? ", " : "") + std::string{to_string(lies[i].kind)};
    out += ')';
  }
  return out;
}

}  // namespace cleave
