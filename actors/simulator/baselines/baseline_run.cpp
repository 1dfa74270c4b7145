#include "actors/simulator/baselines/baseline_run.hpp"

#include <algorithm>
#include <cmath>

#include "actors/simulator/baselines/asteroid.hpp"
#include "actors/simulator/baselines/data_parallel.hpp"
#include "actors/simulator/baselines/megatron.hpp"

namespace cleave {

namespace {

std::vector<device_view> members(const sim_fleet& fleet) {
  std::vector<device_view> out;
  for (size_t i = 0; i < fleet.size(); ++i)
    if (fleet.devices()[i].member && fleet.devices()[i].alive)
      out.push_back({static_cast<int32_t>(i), fleet.devices()[i].profile, 0});
  return out;
}

// Seconds the failure of used device `at` costs once it is detected.
double recovery_cost(const baseline_config& cfg, const baseline_step& plan, size_t at,
                     double progress, int64_t steps_since_checkpoint, const sim_fleet& fleet) {
  if (cfg.system == baseline_system::asteroid && cfg.replay) {
    const auto group = static_cast<size_t>(plan.group[at]);
    const double micro_batches = std::ceil(static_cast<double>(cfg.batch) / static_cast<double>(plan.micro_batch));
    double cost = std::min(micro_batches, static_cast<double>(plan.stages)) * plan.stage_seconds;
    if (plan.group_size[group] == 1) {
      // The stage's only device is gone: its layers' state goes to the
      // devices that take the stage over (the slowest downlink of the plan
      // bounds it).
      double slowest = 0;
      for (int32_t id : plan.used)
        if (fleet.devices()[static_cast<size_t>(id)].alive)
          slowest = std::max(slowest, 1.0 / fleet.devices()[static_cast<size_t>(id)].profile.downlink);
      cost += static_cast<double>(state_bytes(plan.group_parameters[group])) * slowest;
    }
    return cost;
  }
  double reload = 0;
  for (size_t i = 0; i < plan.used.size(); ++i) {
    const auto& d = fleet.devices()[static_cast<size_t>(plan.used[i])];
    if (d.alive) reload = std::max(reload, static_cast<double>(plan.state_held[i]) / d.profile.downlink);
  }
  return static_cast<double>(steps_since_checkpoint) * plan.seconds + progress + reload;
}

}  // namespace

baseline_step plan_baseline(const baseline_config& cfg, const std::vector<device_view>& devices) {
  const auto footprint = footprint_of(cfg.model);
  switch (cfg.system) {
    case baseline_system::asteroid: return plan_asteroid(footprint, cfg.batch, devices, cfg.wire_bytes);
    case baseline_system::megatron:
      return plan_megatron(cfg.model, footprint, cfg.batch, devices, cfg.wire_bytes);
    case baseline_system::data_parallel:
      return plan_data_parallel(footprint, cfg.batch, devices, cfg.wire_bytes);
  }
  return {};
}

baseline_result simulate_baseline(const baseline_config& cfg,
                                  const std::vector<device_profile>& devices, churn_feed& churn) {
  baseline_result res;
  sim_fleet fleet(devices);
  baseline_step plan = plan_baseline(cfg, members(fleet));
  res.plan = plan;
  uint64_t planned_for = fleet.epoch();
  double now = 0;
  int64_t last_checkpoint = 0;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    fleet.admit_joined();
    churn.begin_step(step + 1, now, fleet);  // churn files count steps from 1, as live runs do
    if (fleet.epoch() != planned_for) {
      plan = plan_baseline(cfg, members(fleet));
      planned_for = fleet.epoch();
    }
    if (!plan.fits) {
      res.plan = plan;
      break;
    }
    if (cfg.checkpoint_every <= 0 || step % cfg.checkpoint_every == 0) last_checkpoint = step;
    const double began = now;
    double end = now + plan.seconds;
    while (churn.next_time() < end) {
      const timed_churn ev = churn.pop(fleet);
      if (!fleet.apply(ev, cfg.detection_seconds, churn.queue())) continue;
      const auto at = std::find(plan.used.begin(), plan.used.end(), ev.device);
      if (at == plan.used.end()) continue;  // not a device the plan uses
      ++res.failures;
      const double progress = std::max(0.0, ev.at - cfg.detection_seconds - began);
      const double cost = cfg.detection_seconds
                          + recovery_cost(cfg, plan, static_cast<size_t>(at - plan.used.begin()),
                                          progress, step - last_checkpoint, fleet);
      res.recovery_seconds += cost;
      end += cost;
      plan = plan_baseline(cfg, members(fleet));
      planned_for = fleet.epoch();
      if (!plan.fits) break;
    }
    for (size_t i = 0; i < plan.used.size(); ++i) {
      auto& d = fleet.devices()[static_cast<size_t>(plan.used[i])];
      d.bytes_up += plan.bytes_sent[i];
      d.bytes_down += plan.bytes_received[i];
      d.peak_bytes = std::max(d.peak_bytes, plan.memory_bytes[i]);
      d.busy_seconds += plan.compute;
    }
    now = end;
    res.step_seconds.push_back(end - began);
    if (!plan.fits) {
      res.plan = plan;
      break;
    }
  }
  res.devices = fleet.devices();
  return res;
}

}  // namespace cleave
