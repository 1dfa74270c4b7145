#include "actors/churn/churn_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "schema/errors.hpp"
#include "schema/json_file.hpp"

namespace cleave {

namespace {

constexpr size_t max_events = 100000;

}  // namespace

const char* to_string(churn_action a) {
  switch (a) {
    case churn_action::die: return "die";
    case churn_action::hang: return "hang";
    case churn_action::slow: return "slow";
    case churn_action::join: return "join";
    case churn_action::crash: return "crash";
  }
  return "?";
}

caf::error churn_schedule::apply(fleet_state& fleet, churn_event& ev) {
  if (ev.action == churn_action::join) {
    ev.device = fleet.next_index++;
    fleet.alive.insert(ev.device);
    fleet.healthy.insert(ev.device);
    return caf::none;
  }
  if (fleet.alive.count(ev.device) == 0)
    return fail("device " + std::to_string(ev.device) + " does not exist or is already dead");
  fleet.healthy.erase(ev.device);
  if (ev.action == churn_action::die || ev.action == churn_action::crash)
    fleet.alive.erase(ev.device);
  return caf::none;
}

caf::expected<churn_schedule> churn_schedule::from_file(const std::string& path,
                                                        int initial_devices) {
  auto text = read_small_file(path, "churn file");
  if (!text) return text.error();
  return from_text(*text, path, initial_devices);
}

caf::expected<churn_schedule> churn_schedule::from_text(std::string_view text,
                                                        const std::string& path,
                                                        int initial_devices) {
  auto parsed = parse_json(text, path);
  if (!parsed) return parsed.error();
  const auto& doc = *parsed;
  if (!doc.is_object() || !doc.contains("events") || !doc["events"].is_array())
    return fail(path + ": expected an object with an \"events\" array");
  if (doc["events"].size() > max_events)
    return fail(path + ": more than " + std::to_string(max_events) + " events");
  churn_schedule s;
  for (int32_t i = 0; i < initial_devices; ++i) {
    s.fleet_.alive.insert(i);
    s.fleet_.healthy.insert(i);
  }
  s.fleet_.next_index = initial_devices;
  fleet_state check = s.fleet_;
  int64_t last_step = 0;
  size_t index = 0;
  for (const auto& e : doc["events"]) {
    const std::string where = path + ": events[" + std::to_string(index++) + "]";
    if (!e.is_object()) return fail(where + ": expected an object");
    churn_event ev;
    if (!e.contains("step") || !e["step"].is_number_integer() || e["step"].get<int64_t>() < 1)
      return fail(where + ": step must be an integer >= 1");
    ev.step = e["step"].get<int64_t>();
    if (ev.step < last_step) return fail(where + ": steps must not go backwards");
    last_step = ev.step;
    if (e.contains("after_seconds")) {
      if (!e["after_seconds"].is_number()) return fail(where + ": after_seconds must be a number");
      ev.after_seconds = e["after_seconds"].get<double>();
      if (!(ev.after_seconds >= 0 && ev.after_seconds <= 3600))
        return fail(where + ": after_seconds must be in [0, 3600]");
    }
    const std::string action = e.contains("action") && e["action"].is_string()
                                 ? e["action"].get<std::string>() : "";
    if (action == "die") ev.action = churn_action::die;
    else if (action == "hang") ev.action = churn_action::hang;
    else if (action == "slow") ev.action = churn_action::slow;
    else if (action == "join") ev.action = churn_action::join;
    else if (action == "crash") ev.action = churn_action::crash;
    else return fail(where + ": action must be die, crash, hang, slow or join");
    if (ev.action == churn_action::join) {
      const std::string name = e.contains("profile") && e["profile"].is_string()
                                 ? e["profile"].get<std::string>() : "vm";
      auto p = preset_profile(name);
      if (!p) return fail(where + ": " + describe(p.error()));
      ev.profile = *p;
    } else {
      if (!e.contains("device") || !e["device"].is_number_integer())
        return fail(where + ": device must be an integer fleet index");
      const auto dev = e["device"].get<int64_t>();
      if (dev < 0 || dev > 1000000) return fail(where + ": device index out of range");
      ev.device = static_cast<int32_t>(dev);
    }
    if (ev.action == churn_action::slow) {
      if (!e.contains("factor") || !e["factor"].is_number())
        return fail(where + ": slow needs a numeric factor");
      ev.factor = e["factor"].get<double>();
      if (!(ev.factor >= 1 && ev.factor <= 1000)) return fail(where + ": factor must be in [1, 1000]");
    }
    if (auto err = apply(check, ev)) return fail(where + ": " + describe(err));
    s.events_.push_back(std::move(ev));
  }
  return s;
}

churn_schedule churn_schedule::random(double rate, uint64_t seed, int initial_devices,
                                      device_profile join_profile) {
  churn_schedule s;
  s.rate_ = rate;
  s.seed_ = seed;
  s.join_profile_ = std::move(join_profile);
  for (int32_t i = 0; i < initial_devices; ++i) {
    s.fleet_.alive.insert(i);
    s.fleet_.healthy.insert(i);
  }
  s.fleet_.next_index = initial_devices;
  return s;
}

std::vector<churn_event> churn_schedule::due(int64_t step) {
  std::vector<churn_event> out;
  if (rate_ == 0) {
    while (next_ < events_.size() && events_[next_].step <= step) {
      if (events_[next_].step == step) out.push_back(events_[next_]);
      ++next_;
    }
    return out;
  }
  // Poisson(rate) events this step, from a stream of their own: the same
  // seed gives the same schedule whatever else the run draws.
  rng r(derive_seed(seed_, 0x636875726eULL + static_cast<uint64_t>(step)));
  int count = 0;
  for (double p = std::exp(-rate_), acc = p, u = r.uniform(); u > acc && count < 64;) {
    ++count;
    p *= rate_ / count;
    acc += p;
  }
  for (int i = 0; i < count; ++i) {
    churn_event ev;
    ev.step = step;
    ev.after_seconds = 0.05 * r.uniform();
    ev.action = static_cast<churn_action>(r.below(4));
    if (ev.action != churn_action::join) {
      if (fleet_.healthy.size() <= 1) continue;  // keep one device alive and well
      auto it = fleet_.healthy.begin();
      std::advance(it, static_cast<long>(r.below(fleet_.healthy.size())));
      ev.device = *it;
    }
    if (ev.action == churn_action::slow) ev.factor = 2 + 8 * r.uniform();
    if (ev.action == churn_action::join) ev.profile = join_profile_;
    if (apply(fleet_, ev)) continue;
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace cleave
