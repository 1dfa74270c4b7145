#include "actors/ps/engine/accounts.hpp"

#include <algorithm>

namespace cleave {

runtime_accounts combine_shards(const std::vector<runtime_accounts>& shards) {
  runtime_accounts out;
  for (const auto& acc : shards) {
    for (const auto& [id, d] : acc.devices) {
      auto& o = out.devices[id];
      o.profile = d.profile;
      o.tiles += d.tiles;
      o.bytes_down += d.bytes_down;
      o.bytes_up += d.bytes_up;
      o.cache_hits += d.cache_hits;
      o.operands += d.operands;
      o.operands_named += d.operands_named;
      o.misses += d.misses;
      o.refused += d.refused;
      o.flops += d.flops;
      o.busy_seconds += d.busy_seconds;
      o.most_tasks_at_once = std::max(o.most_tasks_at_once, d.most_tasks_at_once);
    }
    auto& t = out.totals;
    t.ps_compute_seconds = std::max(t.ps_compute_seconds, acc.totals.ps_compute_seconds);
    t.issue_seconds = std::max(t.issue_seconds, acc.totals.issue_seconds);
    t.wait_seconds = std::max(t.wait_seconds, acc.totals.wait_seconds);
    t.allgather_seconds = std::max(t.allgather_seconds, acc.totals.allgather_seconds);
    t.predicted_wait_seconds = std::max(t.predicted_wait_seconds, acc.totals.predicted_wait_seconds);
    // Shards wait at the same time: the step is the slowest shard's.
    if (acc.prediction.predicted_seconds >= out.prediction.predicted_seconds) {
      out.prediction = acc.prediction;
      out.ps_profile_seconds = acc.ps_profile_seconds;
    }
    out.egress_seconds = std::max(out.egress_seconds, acc.egress_seconds);
    out.ingress_seconds = std::max(out.ingress_seconds, acc.ingress_seconds);
    out.tiles += acc.tiles;
    out.operand_bytes_once += acc.operand_bytes_once;
    out.operand_bytes_once_per_holder += acc.operand_bytes_once_per_holder;
    out.local_gemms += acc.local_gemms;
    out.refused += acc.refused;
    auto& c = out.churn;
    c.failures_detected = std::max(c.failures_detected, acc.churn.failures_detected);
    c.tiles_reassigned += acc.churn.tiles_reassigned;
    c.speculative_tiles += acc.churn.speculative_tiles;
    c.tiles_timed_out += acc.churn.tiles_timed_out;
    c.tiles_at_ps += acc.churn.tiles_at_ps;
    c.recovery_seconds = std::max(c.recovery_seconds, acc.churn.recovery_seconds);
    auto& v = out.verify;
    v.tiles_verified += acc.verify.tiles_verified;
    v.unverifiable += acc.verify.unverifiable;
    v.tiles_replicated += acc.verify.tiles_replicated;
    v.replica_mismatches += acc.verify.replica_mismatches;
    v.seconds = std::max(v.seconds, acc.verify.seconds);  // shards check at the same time
    v.idle_seconds = std::max(v.idle_seconds, acc.verify.idle_seconds);
    v.quarantined.insert(acc.verify.quarantined.begin(), acc.verify.quarantined.end());
  }
  return out;
}

}  // namespace cleave
