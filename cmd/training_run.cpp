#include "cmd/training_run.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "actors/churn/demo_scenario.hpp"
#include "actors/console/console_protocol.hpp"
#include "actors/planner/planner_protocol.hpp"
#include "actors/ps/control_inbox.hpp"
#include "actors/ps/engine/distributed_gemm.hpp"
#include "actors/ps/modellet/modellet_report.hpp"
#include "actors/ps/modellet/modellet_transport.hpp"
#include "actors/ps/runtime_report.hpp"
#include "actors/ps/shards/remote_shard.hpp"
#include "actors/ps/shards/shard_checkpoints.hpp"
#include "actors/ps/shards/sharded_ps.hpp"
#include "actors/simulator/baselines/live_data_parallel.hpp"
#include "kernels/random.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"
#include "schema/json_file.hpp"
#include "training/elapsed.hpp"
#include "training/parameter_store.hpp"
#include "training/report.hpp"

namespace cleave {

namespace {

// The churn actor's summary (counts, detection latencies) as JSON.
nlohmann::json churn_summary(caf::actor_system& sys, const churn_handle& churn) {
  nlohmann::json out = nlohmann::json::object();
  caf::scoped_actor self{sys};
  self->request(churn, std::chrono::seconds(10), caf::get_atom::value)
    .receive([&](const std::string& text) { out = nlohmann::json::parse(text, nullptr, false); },
             [&](caf::error& err) {
               spdlog::warn("churn actor did not report: {}", sys.render(err));
             });
  return out;
}

// The single-process reference's median step on this host (the first step
// left out), measured on the same model and data after the fleet has gone:
// what the demo's step time is held against. 0 if it cannot be measured.
double reference_step_seconds(const train_options& opts) {
  train_options ref = opts;
  ref.steps = 6;
  ref.checkpoint_dir.clear();
  ref.resume = false;
  ref.eval_tokens = ref.model.context;  // one window: the evaluation is not what is measured
  ref.progress_seconds = 1e9;
  auto data = load_training_data(ref);
  if (!data) return 0;
  set_gemm_threads(compute_threads());  // as a --devices=0 run has it
  local_parameter_store store;
  trainer t(ref, **data, default_gemm_engine<float>(), store);
  // Its progress and evaluation lines would read as the demo's own.
  const auto level = spdlog::get_level();
  spdlog::set_level(std::max(level, spdlog::level::warn));
  auto res = t.run();
  spdlog::set_level(level);
  if (!res || res->step_seconds.size() < 2) return 0;
  std::vector<double> steps(res->step_seconds.begin() + 1, res->step_seconds.end());
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  return steps[steps.size() / 2];
}

// Runs the training loop and writes the report. `fleet` holds one engine per
// PS shard (empty: the local reference, still with --ps-shards shards);
// `churn`, if set, is told every step.
// `console`, if set, gets the loop's status (the report's fleet accounts so
// far) every half second and sends the operator's controls, obeyed between
// steps.
// What a run may add to the plain loop, each optional:
//  - `modellets`: the xc output layer's PS side (for the report), and
//    `modellet_frames` its transport, whose exchange times the report adds;
//  - `data_parallel`: the store of --xc-baseline=data-parallel;
//  - `processes`: a sharded PS over shard processes (the run's store and
//    engine), with `training_done` (after the last step, before evaluation)
//    and `shard_report` (the report's per_shard).
struct train_extras {
  const modellet_ps* modellets = nullptr;
  const actor_modellet_transport* modellet_frames = nullptr;
  data_parallel_store* data_parallel = nullptr;
  std::unique_ptr<sharded_ps> processes;
  std::function<void()> training_done;
  std::function<nlohmann::json(int64_t steps)> shard_report;
  std::function<caf::error(const std::string&)> recover_shards;  // trainer::recover
  // Shard processes' own checkpoint files (trainer::checkpoint_shards, restore_shards).
  std::function<caf::expected<shard_set>(int64_t)> checkpoint_shards;
  std::function<caf::error(checkpoint&, std::deque<parameter>&)> restore_shards;
};

// Each shard's share of the training steps' wall time (`trained_seconds`):
// the seconds it spent issuing tiles and waiting on its devices.
void add_step_shares(nlohmann::json& doc, double trained_seconds) {
  if (!doc.contains("per_shard") || !(trained_seconds > 0)) return;
  for (auto& one : doc["per_shard"])
    if (one.contains("wait_seconds"))
      one["step_share"] = (one.value("issue_seconds", 0.0) + one.value("wait_seconds", 0.0)) / trained_seconds;
}

int train(const cleave_config& cfg, const train_options& opts, int threads, int devices,
          const std::vector<distributed_gemm*>& fleet, const churn_handle& churn = {},
          const console_handle& console = {}, train_extras extras = {}) {
  const modellet_ps* modellets = extras.modellets;
  data_parallel_store* data_parallel = extras.data_parallel;
  auto data = load_training_data(opts);
  if (!data) return runtime_error(describe(data.error()));
  std::vector<gemm_engine<float>*> shard_engines(fleet.begin(), fleet.end());
  if (shard_engines.empty())
    shard_engines.assign(static_cast<size_t>(cfg.ps_shards), &default_gemm_engine<float>());
  // One shard: the engine multiplies and a local store updates. More: the
  // sharded PS is both, over the shards' engines.
  std::unique_ptr<sharded_ps> shards = std::move(extras.processes);
  local_parameter_store local;
  if (!shards && shard_engines.size() > 1) shards = std::make_unique<sharded_ps>(shard_engines);
  parameter_store& store = shards          ? static_cast<parameter_store&>(*shards)
                           : data_parallel ? static_cast<parameter_store&>(*data_parallel)
                                           : local;
  trainer t(opts, **data, shards ? static_cast<gemm_engine<float>&>(*shards) : *shard_engines[0],
            store);
  runtime_accounts training;
  auto shard_accounts = [&] {
    std::vector<runtime_accounts> per_shard;
    for (auto* engine : fleet) per_shard.push_back(engine->accounts());
    return per_shard;
  };
  if (!fleet.empty() || churn) {
    t.before_step = [&](int64_t step) {
      if (churn) caf::anon_send(churn, churn_atom::value, step + 1);
      caf::error first;
      for (auto* engine : fleet)
        if (auto err = engine->begin_step(static_cast<uint64_t>(step)); err && !first)
          first = std::move(err);
      return first;
    };
  }
  if (extras.training_done) t.after_training = extras.training_done;
  if (extras.recover_shards) t.recover = extras.recover_shards;
  if (extras.checkpoint_shards) t.checkpoint_shards = extras.checkpoint_shards;
  // A set written over shard processes: any other run puts the moments
  // together from the set's files in its own checkpoint directory.
  t.restore_shards = extras.restore_shards ? extras.restore_shards
                                           : [dir = opts.checkpoint_dir](checkpoint& ck, std::deque<parameter>&) {
                                               return read_set_moments(dir, ck);
                                             };
  // Each shard's accounts as training ends: the report's per_shard leaves
  // the evaluation out, as its step shares do.
  std::vector<runtime_accounts> trained_per_shard;
  if (!fleet.empty()) {
    t.after_training = [&] {
      for (auto* engine : fleet) engine->finish_step();
      trained_per_shard = shard_accounts();
      training = combine_shards(trained_per_shard);
      if (shards) training.totals.allgather_seconds += shards->exchange_seconds();
    };
  }
  const auto started = clock_type::now();
  auto last_status = started - std::chrono::hours(1);
  if (console)
    t.on_step = [&](int64_t step, double loss) {
      if (seconds_since(last_status) < 0.5) return;
      last_status = clock_type::now();
      nlohmann::json status = {{"step", step},
                               {"loss", loss},
                               {"seconds", seconds_since(started)},
                               {"model", to_string(opts.model)},
                               {"devices", devices}};
      const auto per_shard = shard_accounts();
      add_runtime_report(status, combine_shards(per_shard), cfg.ps_shards, step);
      if (extras.shard_report) {
        // Shard processes: what each says of itself, as the report gives it.
        auto rows = extras.shard_report(step);
        for (auto& row : rows) row["step"] = step;
        status["shards"] = std::move(rows);
      } else {
        status["shards"] = shard_report(per_shard, store.shard_bytes(), step);
      }
      caf::anon_send(console, console_status_atom::value, status.dump());
    };
  std::optional<control_inbox> controls;
  if (console) {
    controls.emplace(console.home_system(), console, !opts.checkpoint_dir.empty());
    t.between_steps = [&](int64_t step) { return controls->between_steps(step); };
    t.on_checkpoint = [&](int64_t step, const std::string&) { controls->checkpoint_written(step); };
  }
  auto res = t.run();
  if (!res) return runtime_error(describe(res.error()));
  if (!fleet.empty()) {
    const auto moved = traffic_of(training);
    spdlog::info("fleet: {} tiles, {:.1f} MB down, {:.1f} MB up, {} GEMMs kept local",
                 training.tiles, moved.bytes_down / 1e6, moved.bytes_up / 1e6, training.local_gemms);
  }
  if (cfg.report.empty() && !cfg.demo) return 0;
  auto doc = make_report(opts, *res, devices, threads);
  doc["ps_shards"] = shards ? shards->shards() : cfg.ps_shards;
  if (extras.shard_report) doc["per_shard"] = extras.shard_report(res->steps - res->resumed_from_step);
  if (!fleet.empty()) {
    add_runtime_report(doc, training, cfg.ps_shards, res->steps - res->resumed_from_step);
    doc["per_shard"] = shard_report(trained_per_shard.empty() ? shard_accounts() : trained_per_shard,
                                    store.shard_bytes(), res->steps);
  }
  add_step_shares(doc, res->mean_step_seconds * static_cast<double>(res->steps - res->resumed_from_step));
  if (churn) doc["churn"] = churn_summary(churn.home_system(), churn);
  if (data_parallel)
    doc["data_parallel"] = data_parallel_report(*data_parallel, res->parameters, res->mean_step_seconds);
  if (modellets) {
    const int64_t steps = res->steps - res->resumed_from_step;
    doc["modellets"] = modellet_report(*modellets, static_cast<double>(steps * opts.batch));
    if (extras.modellet_frames) add_exchange_time(doc["modellets"], extras.modellet_frames->time(), steps);
  }
  if (cfg.demo) {
    spdlog::info("measuring the single-process reference's step on this host for the summary");
    const double reference = reference_step_seconds(opts);
    doc["reference_median_step_seconds"] = reference;
    std::istringstream summary(demo_summary(doc, reference));
    for (std::string line; std::getline(summary, line);) spdlog::info("{}", line);
  }
  if (!cfg.report.empty()) {
    if (auto err = write_json_file(cfg.report, doc)) return runtime_error(describe(err));
    spdlog::info("report written to {}", cfg.report);
  }
  return 0;
}

}  // namespace

// The devices the planner knows (alive or suspected) leave once told; the
// answers show the word got out before this process closes its connections.
void tell_devices_run_over(caf::actor_system& sys, const caf::actor& planner) {
  if (!planner) return;
  caf::scoped_actor self{sys};
  self->request(planner, std::chrono::seconds(2), run_over_atom::value)
    .receive([](caf::ok_atom) {}, [](caf::error&) {});  // unanswered: the leaving shows as deaths
  std::vector<fleet_member> members;
  self->request(planner, std::chrono::seconds(2), caf::get_atom::value)
    .receive([&](uint64_t, bool, std::vector<fleet_member>& all, const std::vector<int32_t>&,
                 const std::vector<int32_t>&) { members = std::move(all); },
             [&](caf::error& err) {
               spdlog::warn("cannot tell the devices the run is over: {}", sys.render(err));
             });
  for (const auto& m : members) self->send(m.handle, run_over_atom::value);
  const auto until = clock_type::now() + std::chrono::seconds(2);
  size_t answered = 0;
  for (bool waiting = true; waiting && answered < members.size();)
    self->receive([&](caf::ok_atom) { ++answered; },
                  caf::after(std::chrono::duration_cast<caf::timespan>(until - clock_type::now()))
                    >> [&] { waiting = false; });
  spdlog::info("told {} of {} device(s) that the run is over", answered, members.size());
}

namespace {

// Waits (at most 30 s) until the planner knows `devices` devices; by id.
caf::expected<std::vector<fleet_member>> members_of(caf::actor_system& sys, const caf::actor& planner,
                                                    int devices) {
  caf::scoped_actor self{sys};
  const auto until = clock_type::now() + std::chrono::seconds(30);
  std::vector<fleet_member> members;
  while (clock_type::now() < until) {
    self->request(planner, std::chrono::seconds(2), caf::get_atom::value)
      .receive([&](uint64_t, bool, std::vector<fleet_member>& all, const std::vector<int32_t>&,
                   const std::vector<int32_t>&) { members = std::move(all); },
               [&](caf::error&) { members.clear(); });
    if (static_cast<int>(members.size()) >= devices) {
      std::sort(members.begin(), members.end(),
                [](const fleet_member& a, const fleet_member& b) { return a.id < b.id; });
      return members;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fail(std::to_string(members.size()) + " of " + std::to_string(devices)
              + " devices joined within 30 s: no model-lets placed");
}

// --model=xc on devices: the output layer's model-lets on the fleet, the
// rest of the model at the PS (no tiles: the xc model's products are small
// and sparse, and evaluation scores the PS's copy locally).
int train_xc_on_fleet(caf::actor_system& sys, const cleave_config& cfg, const train_options& opts,
                      int threads, const fleet_run& run) {
  auto members = members_of(sys, run.planner, run.devices);
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
  extras.modellets = ps.get();
  extras.modellet_frames = &transport;
  const int rc = train(cfg, with, threads, run.devices, {}, run.churn, run.console, std::move(extras));
  tell_devices_run_over(sys, run.find_planner ? run.find_planner() : run.planner);
  return rc;
}

}  // namespace

namespace {

// A run over shard processes that lost some (`why`): waits up to `wait`
// seconds for a shard process to listen again at each lost one's address
// and connects to it; the trainer then rolls back. Shards that answered
// wrongly but are still connected are no loss to wait for: their error stands.
caf::error wait_for_lost_shards(const std::vector<remote_shard*>& remotes, const std::string& why, double wait,
                                caf::timespan connect_timeout,
                                const std::function<caf::error(size_t, remote_shard&)>& shard_back) {
  std::vector<size_t> lost;
  for (size_t s = 0; s < remotes.size(); ++s)
    if (remotes[s]->lost()) lost.push_back(s);
  if (lost.empty() || !(wait > 0)) return fail(why);
  const auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(wait));
  for (size_t s : lost) {
    spdlog::warn("ps: PS shard {} at {} is lost ({}); waiting up to {:.0f} s for a shard process to listen there "
                 "again (--shard-wait-seconds), then rolling back to the newest checkpoint",
                 s, remotes[s]->address(), why, wait);
    // Why a process that answered there cannot take the shard's place
    // (shard_back's invalid_argument), kept for the final error: the next
    // attempt drops that connection, so a process started right can take
    // its place. Other failures (a process still dying can take a
    // connection and drop it) are waited through.
    caf::error refused;
    for (;;) {
      auto err = remotes[s]->reconnect(connect_timeout);
      if (!err && shard_back) {
        if (auto back = shard_back(s, *remotes[s])) {
          if (back == caf::sec::invalid_argument && !refused) {
            spdlog::warn("ps: PS shard {}: {}; still waiting", s, describe(back));
            refused = back;
          }
          err = std::move(back);
        }
      }
      if (!err) break;
      if (clock_type::now() >= deadline)
        return fail("PS shard " + std::to_string(s) + " at " + remotes[s]->address() + " did not come back within "
                    + fmt::format("{:.0f}", wait) + " s (--shard-wait-seconds): " + describe(refused ? refused : err)
                    + "; it was lost: " + why);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    spdlog::warn("ps: PS shard {} at {} is back", s, remotes[s]->address());
  }
  return caf::none;
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
    if (!shard) return runtime_error(describe(shard.error()));
    spdlog::info("ps: PS shard {} at {}:{}", remotes.size(), host, port);
    remotes.push_back(shard->get());
    list.shards.push_back(std::move(*shard));
  }
  if (hooks.before_training)
    if (auto err = hooks.before_training(remotes)) return runtime_error(describe(err));
  auto ps = std::make_unique<sharded_ps>(std::move(list));
  const sharded_ps* store = ps.get();
  // With a checkpoint directory every shard writes its own slices there.
  std::unique_ptr<shard_checkpoints> own;
  if (!opts.checkpoint_dir.empty()) {
    own = std::make_unique<shard_checkpoints>(*ps, remotes);
    if (auto err = own->check_dirs()) return runtime_error(describe(err));
  }
  std::vector<remote_shard_traffic> after_training;
  train_extras extras;
  extras.processes = std::move(ps);
  if (own) {
    extras.checkpoint_shards = [&](int64_t step) { return own->write(step); };
    extras.restore_shards = [&](checkpoint& ck, std::deque<parameter>& params) {
      auto err = own->restore(ck, params, opts.checkpoint_dir);
      // A shard lost while it loads its file says nothing about the set:
      // wait for it again and retry the same set, a few times at most.
      for (int again = 0; err && again < 3 && std::any_of(remotes.begin(), remotes.end(),
                                                          [](remote_shard* r) { return r->lost(); });
           ++again) {
        if (auto gone = wait_for_lost_shards(remotes, describe(err), cfg.shard_wait_seconds, connect_timeout,
                                                 hooks.shard_back))
          return gone;
        err = own->restore(ck, params, opts.checkpoint_dir);
      }
      if (!err)
        spdlog::info("ps: checkpoint set of step {}: {}", ck.step,
                     ck.shards.count == remotes.size()
                       ? "every PS shard loaded its own file"
                       : "the moments put together from its " + std::to_string(ck.shards.count) + " shard files");
      return err;
    };
  }
  std::vector<std::optional<shard_stats>> trained_stats;  // each shard's own counts as training ends
  extras.training_done = [&] {
    for (auto* r : remotes) {
      after_training.push_back(r->traffic());
      auto st = r->stats();
      trained_stats.push_back(st ? std::optional<shard_stats>{*st} : std::nullopt);
    }
  };
  extras.recover_shards = [&](const std::string& why) {
    return wait_for_lost_shards(remotes, why, cfg.shard_wait_seconds, connect_timeout, hooks.shard_back);
  };
  // Each shard's bytes each way as this process counted them (frames with
  // their headers): in all, and per step of training (its products,
  // gradients and updates, without the attach and the evaluation); and the
  // shard's own peak memory.
  extras.shard_report = [&](int64_t steps) {
    auto out = nlohmann::json::array();
    const auto memory = store->shard_bytes();
    for (size_t s = 0; s < remotes.size(); ++s) {
      const auto all = remotes[s]->traffic();
      const auto attach = remotes[s]->traffic_after_attach();
      const auto trained = s < after_training.size() ? after_training[s] : all;
      const double per_step = steps > 0 ? static_cast<double>(steps) : 1.0;
      nlohmann::json one = {
        {"shard", s},
        {"address", remotes[s]->address()},
        {"bytes_to_shard", all.bytes_sent},
        {"bytes_from_shard", all.bytes_received},
        {"attach_bytes", attach.bytes_sent},
        {"bytes_to_shard_per_step", static_cast<double>(trained.bytes_sent - attach.bytes_sent) / per_step},
        {"bytes_from_shard_per_step", static_cast<double>(trained.bytes_received - attach.bytes_received) / per_step},
        {"memory_bytes", memory[s]}};
      if (auto st = remotes[s]->stats()) {
        one["shard_peak_rss_bytes"] = st->peak_rss_bytes;
        one["shard_bytes_in"] = st->bytes_in;
        one["shard_bytes_out"] = st->bytes_out;
        const bool trained_known = s < trained_stats.size() && trained_stats[s];
        add_shard_device_stats(one, trained_known ? *trained_stats[s] : *st);
      } else {
        spdlog::warn("PS shard {} gave no statistics: {}", s, describe(st.error()));
      }
      out.push_back(std::move(one));
    }
    return out;
  };
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
  const int rc = train(cfg, opts, threads, run.devices, fleet, run.churn, run.console);
  tell_devices_run_over(sys, run.find_planner ? run.find_planner() : run.planner);
  return rc;
}

}  // namespace cleave
