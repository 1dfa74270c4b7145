#pragma once
// The embedded demo (`cleave --role=all` with no model or fleet flags): a
// fleet of 64 emulated devices and a scenario that shows what the runtime
// does about churn and lies while the small gpt trains. Plain data: the
// fleet, churn and liars are the same JSON a user would write, read by the
// same readers, so the demo exercises nothing a user cannot.
//
// The fleet: 52 desktop-class devices faster than one core of this host on a
// fast LAN (the planner's choice), 6 laptops and 6 phones whose links make
// their tiles slow (the planner mostly leaves them out).
// The scenario, at fractions of the run: device 3 lies from the start (it is
// quarantined after its third refused result); device 2 dies with tiles in
// flight at 15%; device 5 hangs at 25%; device 9 crashes on its next tile at
// 35%; three fast devices join at 45%; device 1 slows down 8x at 55%; device
// 12 dies at 65%. The low indices are the devices the planner uses first.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "actors/churn/churn_schedule.hpp"
#include "actors/device/byzantine_file.hpp"
#include "schema/profile.hpp"

namespace cleave {

struct demo_setup {
  std::vector<device_profile> fleet;
  churn_schedule churn;   // empty without the scenario
  byzantine_fleet liars;  // empty without the scenario
  std::string story;      // one line per scripted event, for the log
};

inline constexpr int demo_devices = 64;
inline constexpr int64_t demo_steps = 300;
inline constexpr const char* demo_console = "127.0.0.1:8080";  // or any free port when taken

// The demo for a run of `steps` steps, with or without its scenario.
caf::expected<demo_setup> make_demo(int64_t steps, bool with_scenario);

// The lines a demo run ends with, from its report (training/report.hpp with
// the runtime's fields): the loss against the unigram loss, tiles by device
// class, failures handled, liars quarantined, and the median step against
// the single-process reference's (measured on the same host just before).
std::string demo_summary(const nlohmann::json& report, double reference_step_seconds);

}  // namespace cleave
