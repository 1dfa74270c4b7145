// --role=simulate: wiring only. Flags become a sim_config (the same planner
// and detector options as a live run), a fleet (a file or a seeded preset
// draw) and a churn feed; actors/simulator/ runs the steps and writes the
// report.

#include <chrono>
#include <iostream>

#include <spdlog/spdlog.h>

#include "actors/detector/detection_time.hpp"
#include "actors/simulator/baselines/baseline_run.hpp"
#include "actors/simulator/cleave_sim.hpp"
#include "actors/simulator/fleet_draw.hpp"
#include "actors/simulator/sim_report.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"
#include "schema/json_file.hpp"

namespace cleave {

namespace {

caf::expected<std::vector<device_profile>> simulated_fleet(const cleave_config& cfg) {
  if (!cfg.fleet.empty() && !cfg.fleet_preset.empty())
    return fail("use --fleet or --fleet-preset, not both");
  if (!cfg.fleet.empty()) {
    if (cfg.devices != 0) return fail("--devices goes with --fleet-preset; a --fleet file counts its own devices");
    return read_fleet_file(cfg.fleet, max_described_fleet);
  }
  if (cfg.fleet_preset.empty())
    return fail("--role=simulate needs a fleet: --fleet=FILE, or --fleet-preset=phone|edge|laptop|vm|mix with --devices=N");
  if (static_cast<size_t>(cfg.devices) > max_described_fleet)
    return fail("--devices: at most " + std::to_string(max_described_fleet) + " simulated devices");
  return draw_fleet(cfg.fleet_preset, cfg.devices, static_cast<uint64_t>(cfg.seed));
}

caf::expected<churn_feed> simulated_churn(const cleave_config& cfg, size_t devices) {
  if (!cfg.churn.empty()) {
    auto file = churn_schedule::from_file(cfg.churn, static_cast<int>(devices));
    if (!file) return file.error();
    return churn_feed(std::move(*file));
  }
  if (cfg.churn_rate > 0) return churn_feed(cfg.churn_rate, static_cast<uint64_t>(cfg.seed));
  return churn_feed();
}

caf::expected<sim_config> simulation_of(const cleave_config& cfg, const train_options& opts) {
  sim_config sc;
  sc.model = opts.model;
  if (sc.model.kind == "gpt" && !cfg.vocab_given && cfg.gpt_shape.rfind("opt-", 0) == 0)
    sc.model.vocab = 50272;  // OPT's tokenizer
  sc.batch = opts.batch;
  sc.steps = opts.steps > 0 ? opts.steps : 1;
  if (!(cfg.ps_ingress >= 0)) return fail("--ps-ingress must be >= 0 (0: as --ps-egress)");
  if (!(cfg.ps_memory_bandwidth > 0)) return fail("--ps-memory-bandwidth must be positive");
  if (cfg.recovery != "replay" && cfg.recovery != "restart")
    return fail("--recovery must be replay or restart, got '" + cfg.recovery + "'");
  sc.planner = planned_fleet_cost(cfg);
  sc.shards.assign(static_cast<size_t>(cfg.ps_shards), shard_links{sc.planner.ps_egress, sc.planner.ps_ingress});
  if (!(cfg.sim_ps_flops >= 0) || !(cfg.sim_ps_link >= 0))
    return fail("--sim-ps-flops and --sim-ps-link must be >= 0 (0: as the planner is told)");
  sc.ps_in_fact.flops = cfg.sim_ps_flops;
  sc.ps_in_fact.link = cfg.sim_ps_link;
  sc.ps_ops = cfg.sim_ps_ops;
  sc.ps_ops.threads = cfg.ps_op_threads;
  sc.ps_ops.memory_bandwidth = cfg.ps_memory_bandwidth;
  if (const auto why = refusal(sc.ps_ops); !why.empty()) return fail(why);
  auto wire = parse_wire_precision(
      !cfg.wire.empty() ? cfg.wire : cfg.gpt_shape.rfind("opt-", 0) == 0 ? "bf16" : "fp32");
  if (!wire) return wire.error();
  sc.wire = *wire;
  auto link_model = parse_ps_link_model(cfg.ps_link_model);
  if (!link_model) return link_model.error();
  sc.egress_model = *link_model;
  sc.attention_tiles = cfg.attention_tiles;
  sc.schedule.tile_timeout_seconds = cfg.tile_timeout;
  sc.schedule.speculate_factor = cfg.speculate;
  sc.detector = detector_opts(cfg);
  auto fleet = simulated_fleet(cfg);
  if (!fleet) return fleet.error();
  sc.fleet = std::move(*fleet);
  auto relays = planned_relays(cfg, sc.fleet.size());
  if (!relays) return relays.error();
  sc.relays = std::move(*relays);
  sc.planner.relays = sc.relays.relays;
  return sc;
}

caf::expected<baseline_system> baseline_of(const std::string& system) {
  if (system == "asteroid") return baseline_system::asteroid;
  if (system == "megatron") return baseline_system::megatron;
  if (system == "dp") return baseline_system::data_parallel;
  return fail("--system must be cleave, asteroid, megatron or dp, got '" + system + "'");
}

int run_baseline(const cleave_config& cfg, const sim_config& sc, churn_feed& churn) {
  auto system = baseline_of(cfg.system);
  if (!system) return usage_error(describe(system.error()));
  baseline_config bc;
  bc.system = *system;
  bc.model = sc.model;
  bc.batch = sc.batch;
  bc.steps = sc.steps;
  bc.replay = cfg.recovery == "replay";
  bc.checkpoint_every = cfg.checkpoint_every;
  bc.detection_seconds = detection_seconds(sc.detector);
  // Under bf16-operands Cleave's fp32 results buy its check's resolution;
  // the baselines check nothing, so they move bf16 both ways.
  bc.wire_bytes = operand_element_bytes(sc.wire);
  const auto res = simulate_baseline(bc, sc.fleet, churn);
  auto report = report_head(cfg.system, sc.model, sc.batch, sc.fleet.size(),
                            static_cast<uint64_t>(cfg.seed));
  add_baseline_report(report, res);
  if (res.plan.fits)
    std::cout << "simulated " << cfg.system << ": mean step " << report["mean_step_seconds"].get<double>()
              << " s over " << res.step_seconds.size() << " step(s) on " << sc.fleet.size()
              << " devices (" << res.plan.reason << ")\n";
  else
    std::cout << "simulated " << cfg.system << ": does not fit: " << res.plan.reason << "\n";
  if (!cfg.report.empty())
    if (auto err = write_json_file(cfg.report, report)) return runtime_error(describe(err));
  return 0;
}

}  // namespace

int run_simulate(const cleave_config& cfg, const train_options& opts) {
  auto sc = simulation_of(cfg, opts);
  if (!sc) return usage_error(describe(sc.error()));
  auto churn = simulated_churn(cfg, sc->fleet.size());
  if (!churn) return usage_error(describe(churn.error()));
  if (cfg.system != "cleave") return run_baseline(cfg, *sc, *churn);
  spdlog::info("simulate: {} on {} devices, batch {}, {} step(s), {} PS shard(s)",
               to_string(sc->model), sc->fleet.size(), sc->batch, sc->steps, sc->shards.size());
  const auto t0 = std::chrono::steady_clock::now();
  auto last_line = t0;
  auto res = simulate_cleave(*sc, *churn, [&](int64_t done, double virtual_seconds) {
    const auto now = std::chrono::steady_clock::now();
    if (done == sc->steps || std::chrono::duration<double>(now - last_line).count() >= cfg.progress_seconds) {
      spdlog::info("simulate: step {}/{} at {:.1f} virtual s ({:.1f} s here)", done, sc->steps,
                   virtual_seconds, std::chrono::duration<double>(now - t0).count());
      last_line = now;
    }
  });
  if (!res) return runtime_error(describe(res.error()));
  auto report = report_head(cfg.system, sc->model, sc->batch, sc->fleet.size(),
                            static_cast<uint64_t>(cfg.seed));
  add_cleave_report(report, *sc, *res);
  std::cout << "simulated " << cfg.system << ": mean step " << report["mean_step_seconds"].get<double>()
            << " s over " << res->steps.size() << " step(s) on " << sc->fleet.size() << " devices\n";
  if (!cfg.report.empty())
    if (auto err = write_json_file(cfg.report, report)) return runtime_error(describe(err));
  return 0;
}

}  // namespace cleave
