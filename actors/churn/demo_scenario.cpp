#include "actors/churn/demo_scenario.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

namespace cleave {

namespace {

constexpr const char* demo_fleet_text = R"({"devices": [
  {"name": "desktop", "flops": 1e11, "memory_bytes": 8e9, "downlink": 1e10, "uplink": 1e10,
   "latency": 0.0, "count": 52},
  {"preset": "laptop", "count": 6},
  {"preset": "phone", "count": 6}]})";

constexpr const char* demo_liars_text =
  R"({"liars": [{"device": 3, "lies": [{"kind": "element", "rate": 0.5}]}]})";

struct scripted {
  double at;  // fraction of the run
  const char* action;
  int device;  // -1 for a join
  const char* words;
};

constexpr scripted demo_events[] = {
  {0.15, "die", 2, "device 2 dies with tiles in flight"},
  {0.25, "hang", 5, "device 5 hangs (alive to the network, silent)"},
  {0.35, "crash", 9, "device 9 crashes when its next tile arrives"},
  {0.45, "join", -1, "three fast devices join"},
  {0.55, "slow", 1, "device 1 slows down 8x"},
  {0.65, "die", 12, "device 12 dies"},
};

}  // namespace

caf::expected<demo_setup> make_demo(int64_t steps, bool with_scenario) {
  demo_setup out;
  auto fleet = parse_fleet(demo_fleet_text, "the demo fleet");
  if (!fleet) return fleet.error();
  out.fleet = std::move(*fleet);
  if (!with_scenario) return out;
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : demo_events) {
    const auto step = std::max<int64_t>(1, static_cast<int64_t>(std::llround(e.at * static_cast<double>(steps))));
    const int copies = e.device < 0 ? 3 : 1;
    for (int i = 0; i < copies; ++i) {
      nlohmann::json ev = {{"step", step}, {"action", e.action}};
      if (e.device >= 0) ev["device"] = e.device;
      else ev["profile"] = "fast";
      if (std::string{e.action} == "die") ev["after_seconds"] = 0.02;
      if (std::string{e.action} == "slow") ev["factor"] = 8;
      events.push_back(ev);
    }
    out.story += "step " + std::to_string(step) + ": " + e.words + "\n";
  }
  auto churn = churn_schedule::from_text(nlohmann::json{{"events", events}}.dump(),
                                         "the demo scenario", static_cast<int>(out.fleet.size()));
  if (!churn) return churn.error();
  out.churn = std::move(*churn);
  auto liars = byzantine_from_text(demo_liars_text, "the demo's liars", static_cast<int>(out.fleet.size()));
  if (!liars) return liars.error();
  out.liars = std::move(*liars);
  out.story = "from the start: device 3 lies about half of its results\n" + out.story;
  return out;
}

std::string demo_summary(const nlohmann::json& report, double reference_step_seconds) {
  auto number = [&](const char* key) { return report.value(key, 0.0); };
  auto line = [](const char* format, double a, double b = 0, double c = 0) {
    char buf[200];
    std::snprintf(buf, sizeof buf, format, a, b, c);
    return std::string(buf) + "\n";
  };
  std::string out = "demo summary\n";
  out += line("  loss: %.3f on validation, against %.3f for the unigram model (%.0f%% lower)",
              number("val_loss"), number("unigram_loss"),
              100 * (1 - number("val_loss") / std::max(1e-9, number("unigram_loss"))));
  std::map<std::string, std::pair<int64_t, int64_t>> by_class;  // tiles, devices with tiles
  if (report.contains("per_device"))
    for (const auto& d : report["per_device"]) {
      auto& c = by_class[d.value("profile", std::string{"?"})];
      const auto tiles = d.value("tiles", int64_t{0});
      c.first += tiles;
      c.second += tiles > 0;
    }
  out += "  tiles by device class:";
  for (const auto& [name, c] : by_class)
    out += " " + name + " " + std::to_string(c.first) + " (" + std::to_string(c.second) + " devices)";
  out += "\n";
  out += line("  failures handled: %.0f detected, %.0f tiles reassigned, %.0f speculative copies",
              number("failures_detected"), number("tiles_reassigned"), number("speculative_tiles"));
  out += line("  lies: %.0f results refused, %.0f devices quarantined", number("tiles_rejected"),
              number("devices_quarantined"));
  out += line("  memory: peak RSS %.0f MiB (training; the reference measured after it)",
              number("peak_rss_bytes") / (1 << 20), 0, 0);
  const double step = number("median_step_seconds");
  if (reference_step_seconds > 0)
    out += line("  step: median %.3f s on the fleet, %.3f s for the single-process reference (%.2fx)", step,
                reference_step_seconds, step / reference_step_seconds);
  return out;
}

}  // namespace cleave
