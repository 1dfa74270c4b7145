#pragma once
// A baseline's training steps in virtual time, with the same churn feed as
// Cleave's simulation: each step takes its plan's time; a device of the
// plan that fails stops the step until the detector reports it (the
// baselines' collectives and pipelines are synchronous), then costs its
// system's recovery, and later steps run on a plan made for the devices
// left. Devices that join are planned with from the next step.
//
// Recovery:
//  - restart (data parallelism, Megatron, Asteroid with --recovery=restart):
//    the work since the last checkpoint is lost (a checkpoint at the start
//    of every --checkpoint-every'th step; every step when 0, the kindest
//    case), and every device reloads the state it holds over its downlink;
//  - replay (Asteroid's pipeline replay): the micro-batches the failed
//    stage had in flight are run again through the pipeline (one
//    bottleneck stage time each), and a stage left with no device has its
//    layers' state sent to the devices that take it over.

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/simulator/baselines/baseline.hpp"
#include "actors/simulator/sim_fleet.hpp"
#include "schema/model_config.hpp"

namespace cleave {

enum class baseline_system { asteroid, megatron, data_parallel };

struct baseline_config {
  baseline_system system = baseline_system::data_parallel;
  model_config model;
  int64_t batch = 1;
  int64_t steps = 1;
  bool replay = true;            // asteroid: pipeline replay, else checkpoint restart
  int64_t checkpoint_every = 0;  // restart: steps between checkpoints (0: every step)
  double detection_seconds = 0;
  // Bytes per activation and gradient element on the device links: the
  // same --wire as Cleave's tiles, so every system moves equal floats.
  uint64_t wire_bytes = 4;
};

struct baseline_result {
  baseline_step plan;  // the first step's
  std::vector<double> step_seconds;
  double recovery_seconds = 0;
  uint64_t failures = 0;
  std::vector<sim_device> devices;  // bytes and memory of each, over the run
};

// The plan for the devices given (the ones alive and admitted).
baseline_step plan_baseline(const baseline_config& cfg, const std::vector<device_view>& devices);

// A plan that does not fit (first step, or after churn) ends the run with
// the plan's reason in the result (plan.fits false).
baseline_result simulate_baseline(const baseline_config& cfg,
                                  const std::vector<device_profile>& fleet, churn_feed& churn);

}  // namespace cleave
