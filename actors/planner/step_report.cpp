#include "actors/planner/step_report.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace cleave {

namespace {

std::string grid_of(const plan& p) {
  if (p.local) return "local";
  return std::to_string(p.grid_m) + "x" + std::to_string(p.grid_n) + "x" + std::to_string(p.grid_k);
}

std::string line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string line(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

nlohmann::json parts_json(const step_parts& p) {
  return {{"device_compute", p.device_compute}, {"device_down", p.device_down},
          {"device_up", p.device_up},           {"latency", p.latency},
          {"ps_egress", p.ps_egress},           {"ps_ingress", p.ps_ingress},
          {"ps_tiles", p.ps_tiles},             {"ps_local_compute", p.ps_local_compute}, {"ps_memory_ops", p.ps_memory_ops}};
}

}  // namespace

nlohmann::json step_report_json(const model_config& cfg, int64_t batch, const step_prediction& s) {
  nlohmann::json products = nlohmann::json::array();
  for (const auto& pp : s.products) {
    const auto& g = pp.gemm.problem;
    products.push_back({{"name", pp.gemm.name},
                        {"m", g.m},
                        {"n", g.n},
                        {"k", g.k},
                        {"role", to_string(g.role)},
                        {"count", pp.gemm.count},
                        {"slice", {{"m", pp.slice.m}, {"n", pp.slice.n}, {"k", pp.slice.k}}},
                        {"split", !pp.p.local},
                        {"grid", {pp.p.grid_m, pp.p.grid_n, pp.p.grid_k}},
                        {"tiles", pp.p.tiles.size()},
                        {"devices_used", pp.p.devices_used},
                        {"mirrored", pp.mirrored},
                        {"bound", to_string(pp.p.bound)},
                        {"seconds", pp.seconds},
                        {"total_seconds", pp.total_seconds()},
                        {"down", pp.parts.down},
                        {"compute", pp.parts.compute},
                        {"up", pp.parts.up},
                        {"latency", pp.parts.latency},
                        {"ps_egress", pp.parts.ps_egress},
                        {"ps_ingress", pp.parts.ps_ingress},
                        {"bytes_down", pp.p.bytes_down},
                        {"bytes_up", pp.p.bytes_up},
                        {"reason", pp.p.reason}});
  }
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < s.ps_ops.size(); ++i)
    ops.push_back({{"name", s.ps_ops[i].name},
                   {"flops", s.ps_ops[i].flops},
                   {"bytes", s.ps_ops[i].bytes},
                   {"sharded", s.ps_ops[i].sharded},
                   {"seconds", s.ps_op_seconds[i]}});
  uint64_t down_max = 0, up_max = 0;
  double down_sum = 0, up_sum = 0;
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : s.devices) {
    down_max = std::max(down_max, d.bytes_down);
    up_max = std::max(up_max, d.bytes_up);
    down_sum += static_cast<double>(d.bytes_down);
    up_sum += static_cast<double>(d.bytes_up);
    devices.push_back({{"id", d.id}, {"bytes_down", d.bytes_down}, {"bytes_up", d.bytes_up}});
  }
  const double used = std::max<double>(1, static_cast<double>(s.devices.size()));
  return {{"model", to_string(cfg)},
          {"batch", batch},
          {"shards", s.shards},
          {"devices_offered", s.devices_offered},
          {"devices_used", s.devices_used},
          {"step_seconds", s.seconds},
          {"parts", parts_json(s.parts)},
          {"gemm_flops", s.gemm_flops},
          {"products", products},
          {"ps_ops", ops},
          {"bytes_per_shard", {{"down", s.shard_bytes_down}, {"up", s.shard_bytes_up}}},
          {"bytes_per_device",
           {{"count", s.devices.size()},
            {"down_max", down_max},
            {"down_mean", down_sum / used},
            {"up_max", up_max},
            {"up_mean", up_sum / used}}},
          {"devices", devices}};
}

std::string step_report_text(const model_config& cfg, int64_t batch, const step_prediction& s) {
  std::string out = "plan: " + to_string(cfg) + ", batch " + std::to_string(batch) + ", " +
                    std::to_string(s.devices_offered) + " devices, " + std::to_string(s.shards) +
                    (s.shards == 1 ? " PS shard\n" : " PS shards\n");
  out += line("%-22s %-20s %6s %-5s %-10s %7s %10s %10s %10s %10s %10s %10s  %s\n", "product",
              "m x n x k", "count", "split", "grid", "devices", "seconds", "x count", "down",
              "compute", "up", "ps_egress", "bound");
  for (const auto& pp : s.products) {
    const auto& g = pp.gemm.problem;
    const std::string shape =
        std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
    out += line("%-22s %-20s %6lld %-5s %-10s %7d %10.4g %10.4g %10.4g %10.4g %10.4g %10.4g  %s%s\n",
                pp.gemm.name.c_str(), shape.c_str(), static_cast<long long>(pp.gemm.count),
                pp.p.local ? "no" : "yes", grid_of(pp.p).c_str(), pp.p.devices_used, pp.seconds,
                pp.total_seconds(), pp.parts.down, pp.parts.compute, pp.parts.up,
                pp.parts.ps_egress, to_string(pp.p.bound), pp.mirrored ? " (mirrored)" : "");
  }
  const step_parts& p = s.parts;
  out += line("step: %.4g s = device compute %.4g + device down %.4g + device up %.4g + latency "
              "%.4g + PS egress %.4g + PS ingress %.4g + PS per tile %.4g + PS local compute %.4g + "
              "PS memory-bound ops %.4g\n",
              s.seconds, p.device_compute, p.device_down, p.device_up, p.latency, p.ps_egress,
              p.ps_ingress, p.ps_tiles, p.ps_local_compute, p.ps_memory_ops);
  uint64_t down_max = 0;
  for (const auto& d : s.devices) down_max = std::max(down_max, d.bytes_down);
  out += line("devices used: %d of %d; bytes per step: %.4g down from each PS shard, %.4g to the "
              "busiest device\n",
              s.devices_used, s.devices_offered,
              s.shard_bytes_down.empty() ? 0.0 : static_cast<double>(s.shard_bytes_down.front()),
              static_cast<double>(down_max));
  return out;
}

}  // namespace cleave
