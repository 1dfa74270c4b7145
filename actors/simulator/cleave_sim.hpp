#pragma once
// Cleave's training steps in virtual time. Each step issues every product
// of step_gemms(model, batch) (its count of them, one after another) in the
// batches the engine issues (issue_batches: a layer's dX and dW together), each
// planned once per distinct shape and PS shard by the runtime's own planner
// (make_plan; a backward product as the planner actor answers the engine's
// mirror request: backward_plan) and
// re-placed on the members left when the fleet changes (replace_plan), as
// the engine's plan_cache does. A product the plan keeps local costs its
// FLOPs at the PS's FLOP/s; a split one runs as discrete events
// (batch_sim.hpp). Then the PS's row-wise ops and optimizer (ps_work.hpp).
//
// Products with a weight are cut among the PS shards by the weight's output
// columns, as sharded_ps does (forward and grad_weight split N, grad_input
// splits K); attention products run whole on shard 0.
//
// Identical work is simulated once: the instances of one product in a step
// start on an idle fleet with the same plan, so when no churn event falls
// within them, no tile of the first moved to a device, and the devices'
// operand caches send each instance's tiles the bytes they sent the
// first's (operand_cache.hpp; each instance is still issued, so the caches
// hold what it sent), every instance takes exactly as long and costs
// exactly as much as the first.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/detector/detector_options.hpp"
#include "actors/planner/cost_model.hpp"
#include "actors/planner/step_gemms.hpp"
#include "actors/simulator/batch_sim.hpp"
#include "actors/simulator/ps_work.hpp"
#include "actors/simulator/sim_fleet.hpp"
#include "schema/fleet_relays.hpp"
#include "schema/wire_precision.hpp"

namespace cleave {

struct sim_config {
  model_config model;
  int64_t batch = 1;
  int64_t steps = 1;
  std::vector<device_profile> fleet;
  fleet_relays relays;  // the relay tier (empty: every device talks to the PS)
  // ps_flops, ps_memory_bandwidth and the split rules; the links come from
  // `shards` (each shard on a host of its own: ps_links = shards).
  planner_config planner;
  std::vector<shard_links> shards;  // one per PS shard
  // The PS as it is where it differs from what the planner is told (0: as
  // told). A live --role=all on one host plans with --ps-flops and
  // --ps-egress but computes at the host's speed and sends in-process,
  // its link unpaced: calibrating against it plans as told and runs as is.
  struct {
    double flops = 0;
    double link = 0;  // bytes/s each way, per shard
  } ps_in_fact;
  // The rates the simulated PS works and sends at.
  double ps_flops() const { return ps_in_fact.flops > 0 ? ps_in_fact.flops : planner.ps_flops; }
  std::vector<shard_links> ps_links() const;
  // The PS's own work on tiles, op by op (ps_tile_work.hpp), at the rates
  // measured on the live PS's host: the host's fact, like ps_in_fact.
  ps_op_rates ps_ops;
  schedule_options schedule;
  detector_options detector;
  wire_precision wire = wire_precision::fp32;  // tiles' operands and results (--wire)
  ps_link_model egress_model = ps_link_model::fair;
  // gpt's attention as fused tiles the planner may place on devices
  // (fuse_attention); else per-head products on the PS, as the live engine.
  bool attention_tiles = false;
};

// Where one step's time went.
struct step_time {
  double seconds = 0;
  double device_gemms = 0;  // split products, waiting on devices (incl. their recovery)
  double predicted_device_gemms = 0;  // what their plans predicted
  double ps_gemms = 0;      // products the plans keep on the PS
  double ps_rowwise = 0;
  double ps_optimizer = 0;
};

// One entry of step_gemms in the first step: where its time went.
struct product_time {
  std::string name;
  int64_t count = 0;         // instances per step
  bool split = false;        // planned onto the devices (else the PS computes it)
  uint64_t tiles = 0;        // of one instance's plan, over the shards
  int32_t devices = 0;       // the most any shard's plan uses
  uint64_t bytes_down = 0, bytes_up = 0;  // of the first instance, every shard
  uint64_t unique_bytes = 0;  // its operands, each block once (one instance, every shard)
  double seconds = 0;        // all its instances
  double predicted_seconds = 0;  // all its instances, as their plans predict
  // Issued in one batch with the product of this name (a layer's dW with
  // its dX), whose seconds, predicted seconds and bytes hold both; empty
  // for a batch's first product or one alone.
  std::string batch_head;
};

struct sim_result {
  std::vector<step_time> steps;
  std::vector<product_time> products;  // the first step's, by step_gemms entry
  std::vector<sim_device> devices;  // with what each did over the run
  batch_totals totals;
  ps_work ps;
  uint64_t failures_detected = 0;
  uint64_t local_products = 0, split_products = 0;  // per step, counting instances
  uint64_t operands = 0, cache_hits = 0, cache_misses = 0;  // over the run, as operand_cache counts them
  std::vector<relay_counts> relays;  // by relay, over the run
  double detection_seconds = 0;
  double total_flops_per_step = 0;  // of the products
  uint64_t unique_operand_bytes_per_step = 0;  // the split products' unique_bytes, every instance
};

// Progress: called after each step with (steps done, virtual seconds so far).
using sim_progress = std::function<void(int64_t, double)>;

caf::expected<sim_result> simulate_cleave(const sim_config& cfg, churn_feed& churn,
                                          const sim_progress& progress = {});

}  // namespace cleave
