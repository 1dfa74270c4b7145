#pragma once
// The fleet request's figures are flags: a coordinator over shard processes
// sends its own (actors/ps/shards/shard_fleet.hpp), and a shard plans with
// them as the in-process shard s of S would.

#include <string>

#include "cmd/options.hpp"
#include "schema/shard_fleet_codec.hpp"

namespace cleave {

// The coordinator's figures and the job's `secret`; the shard's index and
// count are filled in per shard.
shard_fleet_msg fleet_job(const cleave_config& cfg, std::string secret);

// A shard's flags once `job` comes (its own --pace-ps-link, --ps-egress and
// --ps-ingress win: a link it paces itself is its own).
void take_fleet_job(cleave_config& cfg, const shard_fleet_msg& job);

}  // namespace cleave
