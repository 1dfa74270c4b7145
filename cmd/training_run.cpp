#include "cmd/training_run.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include <spdlog/spdlog.h>

#include "actors/churn/churn_report.hpp"
#include "actors/detector/device_memory_report.hpp"
#include "actors/churn/demo_scenario.hpp"
#include "actors/console/console_protocol.hpp"
#include "actors/planner/fleet_roster.hpp"
#include "actors/ps/control_inbox.hpp"
#include "actors/ps/engine/distributed_gemm.hpp"
#include "actors/ps/engine_fleet.hpp"
#include "actors/ps/modellet/modellet_report.hpp"
#include "actors/ps/modellet/modellet_transport.hpp"
#include "actors/ps/shards/remote_shard.hpp"
#include "actors/ps/shards/shard_checkpoints.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "actors/ps/shards/sharded_ps.hpp"
#include "actors/ps/shards/shard_process_report.hpp"
#include "actors/ps/shards/shard_recovery.hpp"
#include "actors/ps/runtime_report.hpp"
#include "actors/simulator/baselines/live_data_parallel.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "kernels/random.hpp"
#include "schema/errors.hpp"
#include "schema/json_file.hpp"
#include "training/elapsed.hpp"
#include "training/parameter_store.hpp"
#include "training/reference_step.hpp"
#include "training/report.hpp"

namespace cleave {

namespace {

// What a run may add to the plain loop, each optional:
//  - `data_parallel`: the store of --xc-baseline=data-parallel;
//  - `processes`: a sharded PS over shard processes (the run's store and
//    engine), with `training_done` (after the last step, before
//    evaluation), `shard_status` (the console's rows, one per shard) and
//    what the trainer needs to recover and checkpoint them;
//  - `report`: the sections that kind of run adds to the report.
struct train_extras {
  data_parallel_store* data_parallel = nullptr;
  std::unique_ptr<sharded_ps> processes;
  std::function<void()> training_done;
  std::function<nlohmann::json(int64_t step)> shard_status;
  std::function<caf::error(const std::string&)> recover_shards;  // trainer::recover
  // Shard processes' own checkpoint files (trainer::checkpoint_shards, restore_shards).
  std::function<caf::expected<shard_set>(int64_t)> checkpoint_shards;
  std::function<bool()> shards_lost;
  std::function<caf::error(checkpoint&, std::deque<parameter>&)> restore_shards;
  // However the run ends, before `processes` goes: shard processes are told
  // the job is over (one that is not told waits for a coordinator to come back).
  std::function<void()> end_job;
  std::vector<report_section> report;
};

// Calls a function when it goes out of scope.
struct at_scope_end {
  std::function<void()> f;
  ~at_scope_end() {
    if (f) f();
  }
};

// Runs the training loop and writes the report. `fleet` holds one engine per
// PS shard (empty: the local reference, still with --ps-shards shards);
// `churn`, if set, is told every step.
// `console`, if set, gets the loop's status (the report's fleet accounts so
// far) every half second and sends the operator's controls, obeyed between
// steps.
int train(const cleave_config& cfg, const train_options& opts, int threads, int devices,
          const std::vector<distributed_gemm*>& fleet, const churn_handle& churn = {},
          const console_handle& console = {}, train_extras extras = {}) {
  // Declared before the guard, so that the shards are told before they go.
  std::unique_ptr<sharded_ps> shards = std::move(extras.processes);
  const at_scope_end end_job{std::move(extras.end_job)};
  auto data = load_training_data(opts);
  if (!data) return runtime_error(describe(data.error()));
  std::vector<gemm_engine<float>*> shard_engines(fleet.begin(), fleet.end());
  if (shard_engines.empty())
    shard_engines.assign(static_cast<size_t>(cfg.ps_shards), &default_gemm_engine<float>());
  // One shard: the engine multiplies and a local store updates. More: the
  // sharded PS is both, over the shards' engines.
  local_parameter_store local;
  if (!shards && shard_engines.size() > 1) shards = std::make_unique<sharded_ps>(shard_engines);
  parameter_store& store = shards                 ? static_cast<parameter_store&>(*shards)
                           : extras.data_parallel ? static_cast<parameter_store&>(*extras.data_parallel)
                                                  : local;
  // Optional: the demo lets go of it before it measures the reference.
  std::optional<trainer> t;
  t.emplace(opts, **data, shards ? static_cast<gemm_engine<float>&>(*shards) : *shard_engines[0],
            store);
  engine_fleet engines(fleet, cfg.ps_shards);
  if (!engines.empty() || churn) {
    t->before_step = [&](int64_t step) {
      if (churn) caf::anon_send(churn, churn_atom::value, step + 1);
      return engines.begin_step(step);
    };
  }
  if (extras.training_done) t->after_training = extras.training_done;
  if (!engines.empty()) {
    t->after_training = [&] { engines.training_done(shards ? shards->exchange_seconds() : 0.0); };
    t->before_evaluation_batch = [&](int64_t) { engines.begin_evaluation_batch(); };
  }
  if (extras.recover_shards) t->recover = extras.recover_shards;
  if (extras.checkpoint_shards) t->checkpoint_shards = extras.checkpoint_shards;
  if (extras.shards_lost) t->shards_lost = extras.shards_lost;
  // A set written over shard processes: any other run puts the moments
  // together from the set's files in its own checkpoint directory.
  t->restore_shards = extras.restore_shards ? extras.restore_shards
                                           : [dir = opts.checkpoint_dir](checkpoint& ck, std::deque<parameter>&) {
                                               return read_set_moments(dir, ck);
                                             };
  const auto started = clock_type::now();
  auto last_status = started - std::chrono::hours(1);
  if (console)
    t->on_step = [&](int64_t step, double loss) {
      if (seconds_since(last_status) < 0.5) return;
      last_status = clock_type::now();
      nlohmann::json status = {{"step", step},
                               {"loss", loss},
                               {"seconds", seconds_since(started)},
                               {"model", to_string(opts.model)},
                               {"devices", devices}};
      engines.add_status(status, step, store.shard_bytes());
      if (extras.shard_status) status["shards"] = extras.shard_status(step);
      caf::anon_send(console, console_status_atom::value, status.dump());
    };
  std::optional<control_inbox> controls;
  if (console) {
    controls.emplace(console.home_system(), console, !opts.checkpoint_dir.empty());
    t->between_steps = [&](int64_t step) { return controls->between_steps(step); };
    t->on_checkpoint = [&](int64_t step, const std::string&) { controls->checkpoint_written(step); };
  }
  auto res = t->run();
  if (!res) return runtime_error(describe(res.error()));
  if (!engines.empty()) engines.log_training();
  if (cfg.report.empty() && !cfg.demo) return res->unsaved_final.empty() ? 0 : runtime_error(res->unsaved_final);
  // Each part that counted something adds its section; the order is the
  // order in which they are asked (churn asks its actor, the demo measures).
  std::vector<report_section> sections;
  sections.push_back([&](const train_result& r) { return make_report(opts, r, devices, threads); });
  sections.push_back([&](const train_result&) {
    return nlohmann::json{{"ps_shards", shards ? shards->shards() : cfg.ps_shards}, {"wire", cfg.wire.empty() ? "fp32" : cfg.wire}};
  });
  for (auto& section : extras.report) sections.push_back(std::move(section));
  if (!engines.empty())
    sections.push_back([&](const train_result& r) { return engines.report(r, store.shard_bytes()); });
  if (churn)
    sections.push_back([&](const train_result&) {
      return nlohmann::json{{"churn", churn_report(churn.home_system(), churn)}};
    });
  auto doc = assemble_report(*res, sections);
  if (cfg.demo) {
    // The reference's step is measured in this process, on a model of its
    // own: the run's model and snapshots go first, or the demo's peak
    // memory would be the two runs' together.
    engines.run_over();
    t.reset();
    doc.update(reference_step_section(opts)(*res));
    std::istringstream summary(demo_summary(doc, doc["reference_median_step_seconds"].get<double>()));
    for (std::string line; std::getline(summary, line);) spdlog::info("{}", line);
  }
  if (!cfg.report.empty()) {
    if (auto err = write_json_file(cfg.report, doc)) return runtime_error(describe(err));
    spdlog::info("report written to {}", cfg.report);
  }
  if (!res->unsaved_final.empty()) return runtime_error(res->unsaved_final);
  return 0;
}

// The shard processes this coordinator reached are told the job is over:
// the ones not told would wait for a coordinator to come back.
void end_shard_jobs(const std::vector<remote_shard*>& remotes) {
  for (auto* r : remotes)
    if (auto err = r->finish(); err && !r->lost())
      spdlog::warn("ps: could not tell the PS shard at {} that the job is over: {}", r->address(), describe(err));
}

// --model=xc on devices: the output layer's model-lets on the fleet, the
// rest of the model at the PS (no tiles: the xc model's products are small
// and sparse, and evaluation scores the PS's copy locally).
int train_xc_on_fleet(caf::actor_system& sys, const cleave_config& cfg, const train_options& opts,
                      int threads, const fleet_run& run) {
  auto members = wait_for_members(sys, run.planner, run.devices);
  if (!members) return runtime_error(describe(members.error()));
  std::vector<caf::actor> handles;
  std::vector<device_profile> profiles;
  for (const auto& m : *members) {
    handles.push_back(m.handle);
    profiles.push_back(m.profile);
  }
  actor_modellet_transport transport(
    sys, handles, std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(cfg.tile_timeout)),
    run.emulated ? profiles : std::vector<device_profile>{});
  modellet_ps_options mo;
  mo.sampling.lsh = opts.xc.lsh;
  mo.sampling.lsh.seed = derive_seed(opts.seed, 2);  // as the in-process index's
  mo.sampling.bucket_size = opts.xc.bucket_size;
  mo.sampling.policy = opts.xc.policy;
  mo.sampling.schedule = opts.xc.schedule;
  mo.sampling.min_active = opts.xc.min_active;  // 0: 0.5% of the labels, shared out
  mo.sampling.seed = derive_seed(opts.seed, 3);
  mo.copy_every = cfg.modellet_copy_every >= 0 ? cfg.modellet_copy_every : 50;
  auto ps = std::make_shared<modellet_ps>(profiles, transport, mo);
  train_options with = opts;
  with.xc.modellets = ps;
  train_extras extras;
  extras.report.push_back([&](const train_result& res) {
    const int64_t steps = trained_steps(res);
    auto modellets = modellet_report(*ps, static_cast<double>(steps * opts.batch));
    add_exchange_time(modellets, transport.time(), steps);
    return nlohmann::json{{"modellets", std::move(modellets)}};
  });
  const int rc = train(cfg, with, threads, run.devices, {}, run.churn, run.console, std::move(extras));
  tell_devices_run_over(sys, run.find_planner ? run.find_planner() : run.planner);
  return rc;
}

}  // namespace

int train_locally(const cleave_config& cfg, const train_options& opts, int threads) {
  return train(cfg, opts, threads, 0, {});
}

int train_xc_data_parallel(const cleave_config& cfg, const train_options& opts, int threads,
                           const std::vector<device_profile>& fleet) {
  data_parallel_store store(fleet);
  spdlog::info("xc data-parallel baseline: the dense model replicated on {} devices, gradients summed by a "
               "ring over their links (held as wall time)", fleet.size());
  train_extras extras;
  extras.data_parallel = &store;
  extras.report.push_back([&](const train_result& res) {
    return nlohmann::json{{"data_parallel", data_parallel_report(store, res.parameters, res.mean_step_seconds)}};
  });
  return train(cfg, opts, threads, static_cast<int>(fleet.size()), {}, {}, {}, std::move(extras));
}

int train_with_shard_processes(caf::actor_system& sys, const cleave_config& cfg, const train_options& opts,
                               int threads, const std::vector<std::pair<std::string, uint16_t>>& at,
                               const shard_process_hooks& hooks) {
  const auto connect_timeout = std::chrono::seconds(5);
  const auto call_timeout = std::chrono::duration_cast<caf::timespan>(
    std::chrono::duration<double>(std::max(60.0, cfg.tile_timeout)));
  // With --tls-* the links to the shards are TLS too: this process's
  // certificate (a server's, which may act as a client) against theirs.
  auto tls = edge_tls(cfg, transport::tls_side::client);
  if (!tls) return usage_error("TLS for the links to the PS shards: " + describe(tls.error()));
  sharded_ps::shard_list list;
  std::vector<remote_shard*> remotes;
  for (const auto& [host, port] : at) {
    auto shard = remote_shard::connect(sys, host, port, connect_timeout, call_timeout, *tls);
    if (!shard) {
      end_shard_jobs(remotes);
      return runtime_error(describe(shard.error()));
    }
    spdlog::info("ps: PS shard {} at {}:{}", remotes.size(), host, port);
    remotes.push_back(shard->get());
    list.shards.push_back(std::move(*shard));
  }
  if (hooks.before_training)
    if (auto err = hooks.before_training(remotes)) {
      end_shard_jobs(remotes);
      return runtime_error(describe(err));
    }
  auto ps = std::make_unique<sharded_ps>(std::move(list));
  // With a checkpoint directory every shard writes its own slices there.
  std::unique_ptr<shard_checkpoints> own;
  if (!opts.checkpoint_dir.empty()) {
    own = std::make_unique<shard_checkpoints>(*ps, remotes);
    if (auto err = own->check_dirs()) {
      end_shard_jobs(remotes);
      return runtime_error(describe(err));
    }
  }
  shard_recovery recovery{remotes, cfg.shard_wait_seconds, connect_timeout, hooks.shard_back};
  shard_process_report counts(remotes, *ps);
  train_extras extras;
  extras.processes = std::move(ps);
  if (own) {
    extras.checkpoint_shards = [&](int64_t step) { return own->write(step, checkpoint_steps(opts.checkpoint_dir, max_kept_sets));
    };
    extras.shards_lost = [&] { return any_shard_lost(recovery); };
    extras.restore_shards = [&](checkpoint& ck, std::deque<parameter>& params) {
      return restore_shard_set(*own, recovery, ck, params, opts.checkpoint_dir);
    };
  }
  extras.training_done = [&] { counts.training_done(); };
  extras.end_job = [remotes] { end_shard_jobs(remotes); };
  extras.recover_shards = [&](const std::string& why) { return wait_for_lost_shards(recovery, why); };
  // The console's rows are what each shard says of itself, as the report gives it.
  extras.shard_status = [&](int64_t step) {
    auto rows = counts.per_shard(step);
    for (auto& row : rows) row["step"] = step;
    return rows;
  };
  extras.report.push_back([&](const train_result& res) {
    auto per_shard = counts.per_shard(trained_steps(res));
    add_step_shares(per_shard, trained_seconds(res));
    return nlohmann::json{{"per_shard", std::move(per_shard)}};
  });
  return train(cfg, opts, threads, 0, {}, {}, hooks.console, std::move(extras));
}

int train_on_fleet(caf::actor_system& sys, const cleave_config& cfg, const train_options& opts,
                   int threads, const fleet_run& run) {
  if (opts.model.kind == "xc") return train_xc_on_fleet(sys, cfg, opts, threads, run);
  auto eopts = engine_opts(cfg);
  eopts.find_planner = run.find_planner;
  std::vector<std::unique_ptr<distributed_gemm>> engines;
  std::vector<distributed_gemm*> fleet;
  for (uint32_t s = 0; s < eopts.shards; ++s) {
    eopts.shard = s;
    engines.push_back(std::make_unique<distributed_gemm>(sys, run.planner, eopts));
    fleet.push_back(engines.back().get());
  }
  train_extras extras;
  if (run.detector && !run.emulated)
    extras.report.push_back([&](const train_result&) { return device_memory_report(sys, run.detector); });
  const int rc = train(cfg, opts, threads, run.devices, fleet, run.churn, run.console, std::move(extras));
  tell_devices_run_over(sys, run.find_planner ? run.find_planner() : run.planner);
  return rc;
}

}  // namespace cleave
