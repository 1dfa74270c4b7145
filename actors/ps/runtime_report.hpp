#pragma once
// The distributed runtime's part of the run's report: fleet totals, per
// device, churn, and where the step's time went.

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/ps/engine/distributed_gemm.hpp"

namespace cleave {

// The engines' accounting over the training steps (taken before the final
// evaluation), added to `report`: each of the sections below.
void add_runtime_report(nlohmann::json& report, const runtime_accounts& acc, int ps_shards,
                        int64_t steps);

// What the devices moved and computed, in all and per device.
nlohmann::json fleet_traffic_section(const runtime_accounts& acc, int ps_shards, int64_t steps);
// The results checked, refused, replicated, and the devices quarantined.
nlohmann::json verification_section(const runtime_accounts& acc);
// The failures the engines saw and what they cost.
nlohmann::json failure_section(const runtime_accounts& acc);
// Where the step's time went, per step, against the planner's prediction.
nlohmann::json step_time_section(const runtime_accounts& acc, int64_t steps);

// What devices moved for one account: bytes sent to them and back, tiles.
struct device_traffic {
  uint64_t bytes_down = 0, bytes_up = 0, tiles = 0;
};
device_traffic traffic_of(const runtime_accounts& acc);

// One entry per PS shard, for the console and the report: its index, the
// step it is at, its traffic with the devices, `memory_bytes[s]` (the bytes
// it keeps for its parameters; 0 where not given), its seconds issuing tiles
// and waiting on devices, and what its messages waited on its paced link.
nlohmann::json shard_report(const std::vector<runtime_accounts>& per_shard,
                            const std::vector<uint64_t>& memory_bytes, int64_t step);

// Each shard's share of the training steps' wall time (`trained_seconds`):
// the seconds it spent issuing tiles and waiting on its devices. Entries
// that do not count those (shard processes without devices) get none.
void add_step_shares(nlohmann::json& per_shard, double trained_seconds);

}  // namespace cleave
