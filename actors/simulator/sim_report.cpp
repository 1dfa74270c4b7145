#include "actors/simulator/sim_report.hpp"

#include <algorithm>

namespace cleave {

namespace {

// Of the operand bytes a relay served its devices, the share it did not
// have to fetch: what its store and its shared fetches saved the PS.
double store_hit_rate(uint64_t fetched, uint64_t served) {
  return served == 0 ? 0.0 : std::max(0.0, 1.0 - static_cast<double>(fetched) / static_cast<double>(served));
}

}  // namespace

nlohmann::json report_head(const std::string& system, const model_config& model, int64_t batch,
                           size_t devices, uint64_t seed) {
  nlohmann::json j;
  j["simulated"] = true;
  j["system"] = system;
  j["model"] = to_string(model);
  j["model_kind"] = model.kind;
  j["parameters"] = footprint_of(model).parameters;
  j["batch"] = batch;
  j["devices"] = devices;
  j["seed"] = seed;
  return j;
}

void add_step_seconds(nlohmann::json& j, const std::vector<double>& seconds) {
  double sum = 0;
  for (double s : seconds) sum += s;
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  j["steps"] = seconds.size();
  j["step_seconds"] = seconds;
  j["mean_step_seconds"] = seconds.empty() ? 0.0 : sum / static_cast<double>(seconds.size());
  j["median_step_seconds"] = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
}

void add_cleave_report(nlohmann::json& j, const sim_config& cfg, const sim_result& res) {
  std::vector<double> seconds;
  step_time sum;
  for (const auto& s : res.steps) {
    seconds.push_back(s.seconds);
    sum.device_gemms += s.device_gemms;
    sum.predicted_device_gemms += s.predicted_device_gemms;
    sum.ps_gemms += s.ps_gemms;
    sum.ps_rowwise += s.ps_rowwise;
    sum.ps_optimizer += s.ps_optimizer;
  }
  add_step_seconds(j, seconds);
  const double n_steps = static_cast<double>(std::max<size_t>(1, res.steps.size()));
  double elapsed = 0;
  for (double s : seconds) elapsed += s;
  uint64_t down = 0, up = 0, tiles = 0;
  double fleet_flops = 0;
  auto per_device = nlohmann::json::array();
  for (size_t i = 0; i < res.devices.size(); ++i) {
    const auto& d = res.devices[i];
    down += d.bytes_down;
    up += d.bytes_up;
    tiles += d.tiles;
    if (d.member) fleet_flops += d.profile.flops;
    per_device.push_back({{"id", i}, {"profile", d.profile.name}, {"tiles", d.tiles},
                          {"bytes_down", d.bytes_down}, {"bytes_up", d.bytes_up},
                          {"busy_seconds", d.busy_seconds}, {"flops", d.flops},
                          {"utilisation", elapsed > 0 ? d.busy_seconds / elapsed : 0.0},
                          {"peak_memory_bytes", d.peak_bytes}, {"alive", d.alive}});
  }
  const double n_devices = static_cast<double>(std::max<size_t>(1, res.devices.size()));
  j["ps_shards"] = cfg.shards.size();
  j["tiles"] = tiles;
  j["bytes_down"] = down;
  j["bytes_up"] = up;
  j["bytes_down_per_device_per_step"] = static_cast<double>(down) / n_devices / n_steps;
  j["local_gemms"] = res.local_products;
  j["split_gemms"] = res.split_products;
  j["per_device"] = per_device;
  auto per_shard = nlohmann::json::array();
  const auto links = cfg.ps_links();
  for (size_t s = 0; s < links.size(); ++s) {
    const auto& t = res.totals;
    per_shard.push_back({{"shard", s}, {"egress", links[s].egress},
                         {"ingress", links[s].ingress},
                         {"bytes_down", s < t.shard_bytes_down.size() ? t.shard_bytes_down[s] : 0},
                         {"bytes_up", s < t.shard_bytes_up.size() ? t.shard_bytes_up[s] : 0},
                         {"peak_memory_bytes", res.ps.shard_memory_bytes[s]}});
  }
  j["per_shard"] = per_shard;
  // What left the PS (through its shards' links: to devices, or to relays)
  // against each operand block leaving it once, and, behind relays, once per relay.
  uint64_t ps_down = 0, ps_up = 0;
  for (uint64_t b : res.totals.shard_bytes_down) ps_down += b;
  for (uint64_t b : res.totals.shard_bytes_up) ps_up += b;
  j["ps_bytes_down_per_step"] = static_cast<double>(ps_down) / n_steps;
  j["unique_operand_bytes_per_step"] = res.unique_operand_bytes_per_step;
  j["ps_egress_over_unique"] = res.unique_operand_bytes_per_step == 0 ? 0.0
      : static_cast<double>(ps_down) / n_steps / static_cast<double>(res.unique_operand_bytes_per_step);
  double relay_links = 0;
  if (!cfg.relays.empty()) {
    std::vector<uint64_t> behind(cfg.relays.relays.size(), 0);
    for (const int32_t r : cfg.relays.relay_of)
      if (r >= 0) ++behind[static_cast<size_t>(r)];
    auto relays = nlohmann::json::array();
    uint64_t unique = 0, in = 0, out = 0;
    for (size_t r = 0; r < res.relays.size(); ++r) {
      const auto& c = res.relays[r];
      const auto& p = cfg.relays.relays[r];
      unique += c.unique_bytes;
      in += c.bytes_in;
      out += c.bytes_out;
      relay_links = std::max({relay_links, static_cast<double>(c.bytes_in) / p.downlink,
                              static_cast<double>(c.results) / std::min(p.uplink, p.fanout),
                              static_cast<double>(c.bytes_out) / p.fanout});
      relays.push_back({{"name", p.name}, {"devices", behind[r]}, {"bytes_in", c.bytes_in},
                        {"unique_bytes_in", c.unique_bytes}, {"bytes_out", c.bytes_out},
                        {"results", c.results},
                        {"store_hit_rate", store_hit_rate(c.bytes_in, c.bytes_out)}});
    }
    j["per_relay"] = relays;
    j["relays"] = res.relays.size();
    j["relay_bytes_in"] = in;
    j["relay_bytes_out"] = out;
    j["relay_store_hit_rate"] = store_hit_rate(in, out);
    // Bytes leaving the PS over what would leave it if every block left once per relay that needs it.
    j["ps_egress_over_relay_unique"] = unique == 0 ? 0.0 : static_cast<double>(ps_down) / unique;
  }
  // As a live run's: of the operands named in tasks, those found in the devices' caches.
  j["cache_hit_rate"] = res.operands == 0 ? 0.0 : static_cast<double>(res.cache_hits) / res.operands;
  j["cache_misses"] = res.cache_misses;  // tasks resent whole: a named block the device had evicted
  j["failures_detected"] = res.failures_detected;
  j["detection_seconds"] = res.detection_seconds;
  j["tiles_reassigned"] = res.totals.tiles_reassigned;
  j["speculative_tiles"] = res.totals.speculative_tiles;
  j["tiles_timed_out"] = res.totals.tiles_timed_out;
  j["tiles_at_ps"] = res.totals.tiles_at_ps;
  j["tiles_redone"] = res.totals.tiles_reassigned + res.totals.speculative_tiles
                      + res.totals.tiles_timed_out;
  j["recovery_seconds_total"] = res.totals.recovery_seconds;
  // The PS's own work on tiles (keying, copying, checking, folding), per
  // step and per tile: a live run's issue and check seconds compare.
  j["ps_op_seconds_per_step"] = res.totals.ps_op_seconds / n_steps;
  j["ps_op_seconds_per_tile"] =
    res.totals.tiles == 0 ? 0.0 : res.totals.ps_op_seconds / static_cast<double>(res.totals.tiles);
  j["step_split_seconds"] = {{"wait_on_devices", sum.device_gemms / n_steps},
                             {"predicted_wait_on_devices", sum.predicted_device_gemms / n_steps},
                             {"ps_compute", sum.ps_gemms / n_steps},
                             {"ps_rowwise", sum.ps_rowwise / n_steps},
                             {"ps_optimizer", sum.ps_optimizer / n_steps}};
  auto products = nlohmann::json::array();
  for (const auto& p : res.products) {
    products.push_back({{"name", p.name}, {"count", p.count}, {"split", p.split},
                        {"tiles", p.tiles}, {"devices", p.devices},
                        {"bytes_down", p.bytes_down}, {"bytes_up", p.bytes_up},
                        {"seconds", p.seconds}, {"predicted_seconds", p.predicted_seconds}});
    if (!p.batch_head.empty()) products.back()["batched_with"] = p.batch_head;
  }
  j["per_product"] = products;
  // No step can beat these: the step's GEMM FLOPs on every device and the
  // PS at once; the bytes the PS sent and received through its shards'
  // links; the bytes of the busiest device's downlink and uplink.
  double egress = 0, ingress = 0;
  for (const auto& s : cfg.ps_links()) {
    egress += s.egress;
    ingress += s.ingress;
  }
  double downlinks = 0, uplinks = 0;
  for (const auto& d : res.devices) {
    if (d.profile.downlink > 0) downlinks = std::max(downlinks, static_cast<double>(d.bytes_down) / d.profile.downlink);
    if (d.profile.uplink > 0) uplinks = std::max(uplinks, static_cast<double>(d.bytes_up) / d.profile.uplink);
  }
  const nlohmann::json bounds = {
    {"fleet_flops", fleet_flops > 0 ? res.total_flops_per_step / (fleet_flops + cfg.ps_flops()) : 0.0},
    {"ps_egress", static_cast<double>(ps_down) / n_steps / egress},
    {"ps_ingress", static_cast<double>(ps_up) / n_steps / ingress},
    {"relay_links", relay_links / n_steps},
    {"device_downlinks", downlinks / n_steps},
    {"device_uplinks", uplinks / n_steps}};
  double largest = 0;
  for (const auto& [name, seconds] : bounds.items()) largest = std::max(largest, seconds.get<double>());
  j["lower_bounds_seconds"] = bounds;
  // The PS's own serial work (row-wise ops and optimizer at its memory
  // bandwidth) is no link's or device's: a bound of this design, reported
  // apart from the physical ones.
  const double ps_own = (sum.ps_rowwise + sum.ps_optimizer) / n_steps;
  j["ps_own_work_seconds"] = ps_own;
  const double mean = elapsed / n_steps;
  j["efficiency"] = largest > 0 ? mean / largest : 0.0;
  j["efficiency_with_ps_work"] = std::max(largest, ps_own) > 0 ? mean / std::max(largest, ps_own) : 0.0;
  j["gemm_flops_per_step"] = res.total_flops_per_step;
}

void add_baseline_report(nlohmann::json& j, const baseline_result& res) {
  const auto& p = res.plan;
  j["fits"] = p.fits;
  j["plan"] = p.reason;
  if (!p.fits) {
    j["steps"] = res.step_seconds.size();
    return;
  }
  add_step_seconds(j, res.step_seconds);
  j["micro_batch"] = p.micro_batch;
  j["stages"] = p.stages;
  j["devices_used"] = p.used.size();
  j["step_split_seconds"] = {{"compute", p.compute}, {"communication", p.communication},
                             {"pipeline_bubble", p.bubble}, {"optimizer", p.optimizer}};
  uint64_t down = 0, up = 0;
  auto per_device = nlohmann::json::array();
  for (size_t i = 0; i < res.devices.size(); ++i) {
    const auto& d = res.devices[i];
    down += d.bytes_down;
    up += d.bytes_up;
    per_device.push_back({{"id", i}, {"profile", d.profile.name}, {"bytes_down", d.bytes_down},
                          {"bytes_up", d.bytes_up}, {"busy_seconds", d.busy_seconds},
                          {"peak_memory_bytes", d.peak_bytes}, {"alive", d.alive}});
  }
  j["bytes_down"] = down;
  j["bytes_up"] = up;
  j["per_device"] = per_device;
  j["failures_detected"] = res.failures;
  j["recovery_seconds_total"] = res.recovery_seconds;
}

}  // namespace cleave
