#pragma once
// The Asteroid design (MobiCom 2024): edge pipeline parallelism with data
// parallelism inside each stage. The devices, fastest first, are cut into
// consecutive groups; each group is a pipeline stage holding a consecutive
// range of layers (every member a replica of the stage's weights, gradients
// and moments), splitting each micro-batch among its members in proportion
// to their FLOP/s. A dynamic program over (layers, device units) picks the
// stage split that minimises the bottleneck stage (its compute and its
// activation traffic overlapped, plus its share of its group's gradient
// all-reduce), for each micro-batch size; the fastest step wins.
//
// Assumed: devices are grouped in units of consecutive devices (at most 64
// units) so the program stays small; a stage keeps min(micro-batches, units)
// micro-batches' activations in flight (1F1B's bound on the stage count);
// the step is (micro-batches + stages - 1) x the bottleneck (1F1B's
// bubble), then each group's ring all-reduce of its stage's gradients (not
// overlapped), then the optimizer; activations cross stages at the sending
// group's summed uplinks and the receiving group's summed downlinks.

#include "actors/simulator/baselines/baseline.hpp"

namespace cleave {

baseline_step plan_asteroid(const model_footprint& model, int64_t batch,
                            const std::vector<device_view>& devices,
                            uint64_t wire_bytes = 4);

}  // namespace cleave
