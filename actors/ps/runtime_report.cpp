#include "actors/ps/runtime_report.hpp"

#include <algorithm>

namespace cleave {

device_traffic traffic_of(const runtime_accounts& acc) {
  device_traffic t;
  for (const auto& [id, a] : acc.devices) {
    t.bytes_down += a.bytes_down;
    t.bytes_up += a.bytes_up;
    t.tiles += a.tiles;
  }
  return t;
}

nlohmann::json shard_report(const std::vector<runtime_accounts>& per_shard,
                            const std::vector<uint64_t>& memory_bytes, int64_t step) {
  auto out = nlohmann::json::array();
  for (size_t s = 0; s < per_shard.size(); ++s) {
    const auto t = traffic_of(per_shard[s]);
    const auto& a = per_shard[s];
    out.push_back({{"shard", s}, {"step", step}, {"bytes_down", t.bytes_down},
                   {"bytes_up", t.bytes_up}, {"tiles", t.tiles},
                   {"memory_bytes", s < memory_bytes.size() ? memory_bytes[s] : 0},
                   {"issue_seconds", a.totals.issue_seconds},
                   {"wait_seconds", a.totals.wait_seconds},
                   {"egress_seconds", a.egress_seconds},
                   {"ingress_seconds", a.ingress_seconds}});
  }
  return out;
}

void add_step_shares(nlohmann::json& per_shard, double trained_seconds) {
  if (!(trained_seconds > 0)) return;
  for (auto& one : per_shard)
    if (one.contains("wait_seconds"))
      one["step_share"] = (one.value("issue_seconds", 0.0) + one.value("wait_seconds", 0.0)) / trained_seconds;
}

nlohmann::json fleet_traffic_section(const runtime_accounts& acc, int ps_shards, int64_t steps) {
  uint64_t down = 0, up = 0, hits = 0, operands = 0, tiles = 0;
  auto per_device = nlohmann::json::array();
  for (const auto& [id, a] : acc.devices) {
    down += a.bytes_down;
    up += a.bytes_up;
    hits += a.cache_hits;
    operands += a.operands;
    tiles += a.tiles;
    per_device.push_back({{"id", id}, {"profile", a.profile}, {"tiles", a.tiles},
                          {"bytes_down", a.bytes_down}, {"bytes_up", a.bytes_up},
                          {"busy_seconds", a.busy_seconds}, {"cache_hits", a.cache_hits},
                          {"operands", a.operands}, {"operands_named", a.operands_named}, {"misses", a.misses},
                          {"refused", a.refused}, {"flops", a.flops},
                          {"most_tasks_at_once", a.most_tasks_at_once}});
  }
  const double n_steps = static_cast<double>(std::max<int64_t>(1, steps));
  const double n_devices = static_cast<double>(std::max<size_t>(1, acc.devices.size()));
  auto j = nlohmann::json::object();
  j["ps_shards"] = ps_shards;
  j["tiles"] = tiles;
  j["bytes_down"] = down;
  j["bytes_up"] = up;
  j["cache_hit_rate"] = operands == 0 ? 0.0 : static_cast<double>(hits) / operands;
  j["bytes_down_per_device_per_step"] = static_cast<double>(down) / n_devices / n_steps;
  // The PS's egress over its floors: every operand block sent once a step,
  // and once a step to each holder (a device, or a relay for all its devices).
  j["operand_bytes_once"] = acc.operand_bytes_once;
  j["operand_bytes_once_per_holder"] = acc.operand_bytes_once_per_holder;
  j["bytes_down_over_once"] =
    acc.operand_bytes_once == 0 ? 0.0 : static_cast<double>(down) / static_cast<double>(acc.operand_bytes_once);
  j["bytes_down_over_once_per_holder"] =
    acc.operand_bytes_once_per_holder == 0
      ? 0.0 : static_cast<double>(down) / static_cast<double>(acc.operand_bytes_once_per_holder);
  j["local_gemms"] = acc.local_gemms;
  // The PS's wall time per tile it issued (cutting, hashing, sending).
  j["ps_seconds_per_tile"] =
    acc.tiles == 0 ? 0.0 : acc.totals.issue_seconds / static_cast<double>(acc.tiles);
  j["per_device"] = per_device;
  return j;
}

nlohmann::json verification_section(const runtime_accounts& acc) {
  auto j = nlohmann::json::object();
  // Results refused for any cause (malformed, not finite, failed the
  // check, or outvoted with --replicate): each was computed again elsewhere.
  j["tiles_rejected"] = acc.refused;
  const auto& v = acc.verify;
  j["tiles_verified"] = v.tiles_verified;
  j["tiles_unverifiable"] = v.unverifiable;
  j["tiles_replicated"] = v.tiles_replicated;
  j["replica_mismatches"] = v.replica_mismatches;
  j["devices_quarantined"] = v.quarantined.size();
  j["quarantined_devices"] = std::vector<int32_t>(v.quarantined.begin(), v.quarantined.end());
  j["verify_seconds"] = v.seconds;
  j["verify_idle_seconds"] = v.idle_seconds;
  return j;
}

nlohmann::json failure_section(const runtime_accounts& acc) {
  auto j = nlohmann::json::object();
  j["failures_detected"] = acc.churn.failures_detected;
  j["tiles_reassigned"] = acc.churn.tiles_reassigned;
  j["speculative_tiles"] = acc.churn.speculative_tiles;
  j["tiles_timed_out"] = acc.churn.tiles_timed_out;
  j["tiles_at_ps"] = acc.churn.tiles_at_ps;
  j["recovery_seconds_total"] = acc.churn.recovery_seconds;
  return j;
}

nlohmann::json step_time_section(const runtime_accounts& acc, int64_t steps) {
  const double n_steps = static_cast<double>(std::max<int64_t>(1, steps));
  auto j = nlohmann::json::object();
  const auto& t = acc.totals;
  j["step_split_seconds"] = {{"ps_compute", t.ps_compute_seconds / n_steps},
                             {"issue_tiles", t.issue_seconds / n_steps},
                             {"wait_on_devices", t.wait_seconds / n_steps},
                             {"allgather", t.allgather_seconds / n_steps},
                             {"predicted_wait_on_devices", t.predicted_wait_seconds / n_steps}};
  // Every step but the first (which has no profile yet), predicted before it ended.
  const auto& p = acc.prediction;
  const double compared = static_cast<double>(std::max<int64_t>(1, p.steps));
  j["step_prediction"] = {
    {"steps_compared", p.steps},
    {"measured_seconds", p.measured_seconds / compared},
    {"predicted_seconds", p.predicted_seconds / compared},
    {"predicted_device_seconds", p.predicted_device_seconds / compared},
    {"ps_profile_seconds", acc.ps_profile_seconds},
    {"measured_over_predicted", p.predicted_seconds > 0 ? p.measured_seconds / p.predicted_seconds : 0.0}};
  return j;
}

void add_runtime_report(nlohmann::json& j, const runtime_accounts& acc, int ps_shards,
                        int64_t steps) {
  j.update(fleet_traffic_section(acc, ps_shards, steps));
  j.update(verification_section(acc));
  j.update(failure_section(acc));
  j.update(step_time_section(acc, steps));
}

}  // namespace cleave
