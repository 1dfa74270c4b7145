#pragma once
// What the distributed engine counts: per device, per step, churn, and the
// whole-step prediction. The report and the console read these.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "actors/ps/engine/step_predictor.hpp"

namespace cleave {

struct device_account {
  std::string profile;
  uint64_t tiles = 0;
  uint64_t bytes_down = 0;
  uint64_t bytes_up = 0;
  uint64_t cache_hits = 0;
  uint64_t operands = 0;  // operands needed (hits + sent)
  uint64_t operands_named = 0;  // ... sent as a name only: the device, or its relay, held them
  uint64_t misses = 0;          // named operands it did not hold after all
  uint64_t refused = 0;   // results refused as malformed
  double flops = 0;       // of the tiles it completed
  double busy_seconds = 0;
  uint32_t most_tasks_at_once = 0;  // --pipelined-devices: the most it was sent before answering
};

struct step_account {
  double ps_compute_seconds = 0;  // GEMMs the planner kept local
  double issue_seconds = 0;       // issuing tiles: planning, snapshots, hashing, sending
  double wait_seconds = 0;        // waiting on device tiles
  double allgather_seconds = 0;   // assembling results (no sharding: copies only)
  double predicted_wait_seconds = 0;  // what the cost model predicted for the distributed GEMMs
                                      // (issue and wait, from the first tile sent)
};

// What churn cost: failures seen and the work they moved.
struct churn_account {
  uint64_t failures_detected = 0;   // devices declared dead or suspected
  uint64_t tiles_reassigned = 0;    // outstanding tiles moved off a failed device
  uint64_t speculative_tiles = 0;   // copies of a straggler's tiles
  uint64_t tiles_timed_out = 0;     // given up on after --tile-timeout
  uint64_t tiles_at_ps = 0;         // tiles of split GEMMs the PS computed (no device could)
  double recovery_seconds = 0;      // from a failure until its batch of GEMMs completed, summed
};

// What checking results cost and found (actors/ps/verify/).
struct verify_account {
  uint64_t tiles_verified = 0;      // results that passed Freivalds' test
  uint64_t unverifiable = 0;        // results taken unchecked: the operands were not finite
  uint64_t tiles_replicated = 0;    // tiles computed by two devices and compared (--replicate)
  uint64_t replica_mismatches = 0;  // ... whose copies differed, settled by the PS's own product
  double seconds = 0;               // checking and comparing, on the PS, as results come
  // The checks' work that reads no result (B's digests, op(A)·y), done
  // while the engine had nothing else to do: not on the step's path.
  double idle_seconds = 0;
  std::set<int32_t> quarantined;    // devices refused too often: no more tiles
};

// Everything the engine counted, as of one moment.
struct runtime_accounts {
  std::map<int32_t, device_account> devices;
  step_account totals;
  uint64_t tiles = 0;
  uint64_t local_gemms = 0;
  uint64_t refused = 0;  // results refused: malformed, not finite, failed the check or a replica
  churn_account churn;
  verify_account verify;
  step_predictor::totals prediction;  // whole steps against the prediction
  double ps_profile_seconds = 0;      // the PS's own work per step, as last profiled
  // Seconds messages waited on this PS's paced link (--pace-ps-link), queueing
  // and crossing: tasks on the egress, results on the ingress.
  double egress_seconds = 0, ingress_seconds = 0;
  // Operand bytes the PS would have sent had every block left it once per
  // step, and once per step to each holder (a device, or a relay and all
  // the devices behind it): what its egress is measured against.
  uint64_t operand_bytes_once = 0, operand_bytes_once_per_holder = 0;
};

// One account for the run from the shards' engines: counts add up; the
// shards wait at the same time, so time totals are the slowest shard's, and
// a failure every shard saw is one failure.
runtime_accounts combine_shards(const std::vector<runtime_accounts>& shards);

}  // namespace cleave
