// --role=plan: the predicted step of a model on a fleet, planned by the
// runtime's own planner (actors/planner/step_prediction.hpp), as a table and
// optionally as JSON. Works from the model's shape: no dataset, no weights.

#include <chrono>
#include <iostream>

#include <spdlog/spdlog.h>

#include "actors/planner/step_report.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"
#include "schema/json_file.hpp"
#include "schema/profile.hpp"

namespace cleave {

int run_plan(const cleave_config& cfg, const train_options& opts) {
  if (cfg.fleet.empty()) return usage_error("--role=plan needs --fleet=FILE (see docs/PLANNER.md)");
  if (cfg.batch <= 0) return usage_error("--batch must be positive, got " + std::to_string(cfg.batch));
  if (!(cfg.ps_memory_bandwidth > 0)) return usage_error("--ps-memory-bandwidth must be positive");
  auto fleet = read_fleet_file(cfg.fleet, max_described_fleet);
  if (!fleet) return usage_error(describe(fleet.error()));
  auto relays = planned_relays(cfg, fleet->size());
  if (!relays) return usage_error(describe(relays.error()));
  std::vector<device_view> devices;
  devices.reserve(fleet->size());
  for (size_t i = 0; i < fleet->size(); ++i)
    devices.push_back(device_view{static_cast<int32_t>(i), (*fleet)[i], 0, 0, relays->relay_of[i]});
  planner_config pc = planned_fleet_cost(cfg);
  pc.relays = relays->relays;
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  const auto progress = [&](size_t done, size_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::duration<double>(cfg.progress_seconds)) return;
    last = now;
    spdlog::info("planned {} of {} products ({:.1f} s)", done, total,
                 std::chrono::duration<double>(now - t0).count());
  };
  const auto step = predict_step(opts.model, cfg.batch, devices, pc, cfg.ps_shards, progress);
  std::cout << step_report_text(opts.model, cfg.batch, step) << std::flush;
  if (!cfg.report.empty())
    if (auto err = write_json_file(cfg.report, step_report_json(opts.model, cfg.batch, step)))
      return runtime_error(describe(err));
  return 0;
}

}  // namespace cleave
