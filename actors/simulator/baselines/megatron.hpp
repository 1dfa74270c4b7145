#pragma once
// Megatron-style tensor parallelism among the devices: each of t devices
// holds 1/t of every weight matrix (attention heads and the MLP's columns,
// then rows, as Megatron pairs them) with its gradients and moments, and
// the whole batch goes through all of them in lockstep. Every transformer
// block all-reduces its activations twice forward and twice backward
// (micro-batch x tokens x d_model floats, ring over the devices' links), and
// the embedding once each way; none of it overlaps compute (it sits between
// the blocks' GEMMs). t divides the heads (Megatron's rule), the fastest t
// devices are used, and the batch runs in micro-batches small enough for
// the smallest member's memory; of the t that fit, the fastest step wins.

#include "actors/simulator/baselines/baseline.hpp"
#include "schema/model_config.hpp"

namespace cleave {

baseline_step plan_megatron(const model_config& cfg, const model_footprint& model, int64_t batch,
                            const std::vector<device_view>& devices,
                            uint64_t wire_bytes = 4);

}  // namespace cleave
