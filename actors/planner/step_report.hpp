#pragma once
// A step prediction (step_prediction.hpp) for people and for programs: the
// table --role=plan prints and the JSON document its --report writes.
//
// JSON: {"model", "batch", "shards", "devices_offered", "devices_used",
//  "step_seconds", "parts": {device_compute, device_down, device_up, latency,
//  ps_egress, ps_ingress, ps_tiles, ps_local_compute, ps_memory_ops}, "gemm_flops",
//  "products": [{name, m, n, k, role, count, slice: {m, n, k}, split, grid:
//  [m, n, k], tiles, devices_used, mirrored, bound, seconds, total_seconds,
//  down, compute, up, latency, ps_egress, ps_ingress, bytes_down, bytes_up,
//  reason}], "ps_ops": [{name, flops, bytes, sharded, seconds}],
//  "bytes_per_shard": {down: [...], up: [...]}, "bytes_per_device":
//  {count, down_max, down_mean, up_max, up_mean}, "devices": [{id, bytes_down,
//  bytes_up}]}. Seconds per step unless "seconds" (one occurrence);
//  down/compute/up/latency are the last device's parts of one occurrence.

#include <string>

#include <nlohmann/json.hpp>

#include "actors/planner/step_prediction.hpp"

namespace cleave {

nlohmann::json step_report_json(const model_config& cfg, int64_t batch, const step_prediction& s);

// One line per product (shape, count, split or local, grid, devices, time
// and its parts), then the step and its parts.
std::string step_report_text(const model_config& cfg, int64_t batch, const step_prediction& s);

}  // namespace cleave
