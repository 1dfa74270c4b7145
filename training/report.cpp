#include "training/report.hpp"

#include "kernels/gemm.hpp"
#include "training/process_memory.hpp"

namespace cleave {

nlohmann::json make_report(const train_options& opts, const train_result& res, int devices,
                           int threads) {
  nlohmann::json j;
  j["model"] = to_string(res.model);
  j["model_kind"] = res.model.kind;
  j["dataset"] = opts.dataset;
  j["devices"] = devices;
  j["threads"] = threads;
  j["simd"] = gemm_instruction_sets();
  j["cpu_model"] = gemm_cpu_model();
  j["parameters"] = res.parameters;
  j["batch"] = opts.batch;
  j["seed"] = opts.seed;
  j["steps"] = res.steps;
  j["resumed_from_step"] = res.resumed_from_step;
  j["epochs"] = res.epochs;
  j["final_train_loss"] = res.final_train_loss;
  j["mean_step_seconds"] = res.mean_step_seconds;
  j["median_step_seconds"] = res.median_step_seconds;
  if (res.classifier) {
    j["test_accuracy"] = res.test_accuracy;
    j["test_loss"] = res.test_loss;
  } else {
    j["val_loss"] = res.val_loss;
    j["unigram_loss"] = res.unigram_loss;
  }
  if (opts.model.kind == "xc") {
    j["sparse"] = opts.xc.sparse;
    j["p_at_1"] = res.p_at_1;
    j["p_at_5"] = res.p_at_5;
    j["active_fraction"] = res.active_fraction;
    j["sparse_bytes_per_sample"] = res.sparse_bytes_per_sample;
  }
  j["losses"] = res.losses;
  j["step_seconds"] = res.step_seconds;
  j["eval_seconds"] = res.eval_seconds;
  // Asked before any later section (the demo's reference measurement) adds its own.
  j["peak_rss_bytes"] = peak_rss_bytes();
  j["ps_restarts"] = res.restarts;
  j["checkpoint_failures"] = res.checkpoint_failures;
  return j;
}

nlohmann::json assemble_report(const train_result& res, const std::vector<report_section>& sections) {
  auto report = nlohmann::json::object();
  for (const auto& section : sections) report.update(section(res));
  return report;
}

int64_t trained_steps(const train_result& res) {
  return res.steps - res.resumed_from_step;
}

double trained_seconds(const train_result& res) {
  return res.mean_step_seconds * static_cast<double>(trained_steps(res));
}

}  // namespace cleave
