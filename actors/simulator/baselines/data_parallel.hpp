#pragma once
// Data parallelism with ring all-reduce: every device holds the whole
// model with its gradients and AdamW moments, takes an equal share of the
// batch (ceil(batch / n) samples, the fastest devices first; at most
// `batch` devices), accumulates gradients over micro-batches small enough
// for its memory, and all-reduces the gradients (fp32) over a ring of the
// devices' links. The all-reduce overlaps the backward pass (as PyTorch
// DDP's gradient buckets do): a step is forward + max(backward,
// all-reduce) + the optimizer at the slowest device's FLOP/s. Devices that
// cannot hold the model with one sample's activations are left out; with
// none left, the model does not fit.

#include "actors/simulator/baselines/baseline.hpp"

namespace cleave {

baseline_step plan_data_parallel(const model_footprint& model, int64_t batch,
                                 const std::vector<device_view>& devices,
                            uint64_t wire_bytes = 4);

}  // namespace cleave
