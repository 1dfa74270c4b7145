#pragma once
// A whole training step's predicted time on a fleet: every matrix product of
// the step (step_gemms.hpp) planned as the runtime plans it, plus the PS's
// own work (ps_local_work.hpp), split into parts. Pure.
//
// What it assumes, as the runtime does it:
//  - products run one after another, each `count` times (a layer's dX and dW
//    are issued together by the runtime; their times are added here, as the
//    runtime's own prediction of its wait adds them);
//  - with S shards, a weight product is S slices (step_gemm::cut) planned at
//    once, each on its fair share of the fleet (fair_share, sharers = S) and
//    its shard's share of the PS links (planner_config::ps_links); every
//    slice is planned as the largest one (slices differ by at most one row or
//    column), and attention's per-head products run whole on shard 0;
//  - a weight gradient is planned as the planner answers the runtime's plan
//    cache: backward_plan (placement.hpp), the mirror of its forward
//    product's placement unless a plan of its own predicts faster;
//  - devices pace each tile whole, one after another, as emulated devices
//    do; with planner_config::pipelined_devices, as device processes do
//    (pipelined_seconds: transfers overlap other tiles' compute), on the
//    same plans;
//  - the PS's row-wise ops run on the coordinator and the optimizer on every
//    shard at once, each op taking max(FLOPs / ps_flops, bytes /
//    ps_memory_bandwidth); none of them overlaps the devices' work.

#include <cstdint>
#include <functional>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/planner/plan.hpp"
#include "actors/planner/ps_local_work.hpp"
#include "actors/planner/step_gemms.hpp"
#include "schema/model_config.hpp"

namespace cleave {

// A step's seconds by where they go; total() is the step.
struct step_parts {
  double device_compute = 0;  // split products bound by devices: their compute,
  double device_down = 0;     // ... downlinks,
  double device_up = 0;       // ... uplinks,
  double latency = 0;         // ... and round trips (of the device that finishes last)
  double ps_egress = 0;       // split products bound by the PS's links, sending
  double ps_ingress = 0;      // ... and receiving
  double ps_tiles = 0;        // split products' PS work per tile
  double ps_local_compute = 0;  // products kept on the PS
  double ps_memory_ops = 0;     // row-wise ops and the optimizer
  double total() const;
};

struct product_prediction {
  step_gemm gemm;       // the product as the model issues it, whole
  gemm_problem slice;   // what one shard plans (the whole product with one shard)
  plan p;               // the slice's plan: local, or split with its grid and tiles
  bool mirrored = false;  // placed as its forward product (backward_plan)
  plan_parts parts;     // of one occurrence (zero when local)
  double seconds = 0;   // one occurrence: plan_seconds(p), or pipelined (see above)
  double total_seconds() const { return seconds * static_cast<double>(gemm.count); }
};

struct device_traffic {
  int32_t id = 0;
  uint64_t bytes_down = 0, bytes_up = 0;  // per step, from every shard
};

struct step_prediction {
  std::vector<product_prediction> products;  // in step_gemms' order
  std::vector<ps_op> ps_ops;
  std::vector<double> ps_op_seconds;  // per ps_ops entry, per step
  step_parts parts;
  double seconds = 0;       // parts.total()
  double gemm_flops = 0;    // every product's FLOPs, per step
  int32_t shards = 1;
  int32_t devices_offered = 0;  // the fleet's size
  int32_t devices_used = 0;     // devices that get a tile of some product
  std::vector<device_traffic> devices;  // those, by id
  std::vector<uint64_t> shard_bytes_down, shard_bytes_up;  // per shard link, per step
};

// The step of cfg on `batch` samples (sequences of cfg.context tokens for
// gpt) over `fleet` with `shards` PS shards (>= 1). cfg must be valid
// (make_model's checks); no weights are built. `progress`, if set, hears
// (products planned, products) after each product.
step_prediction predict_step(const model_config& cfg, int64_t batch,
                             const std::vector<device_view>& fleet, const planner_config& pc,
                             int32_t shards,
                             const std::function<void(size_t, size_t)>& progress = {});

}  // namespace cleave
