#include "training/reference_step.hpp"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

#include "kernels/gemm.hpp"
#include "training/parameter_store.hpp"

namespace cleave {

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
  // Its progress and evaluation lines would read as the run's own.
  const auto level = spdlog::get_level();
  spdlog::set_level(std::max(level, spdlog::level::warn));
  auto res = t.run();
  spdlog::set_level(level);
  if (!res || res->step_seconds.size() < 2) return 0;
  std::vector<double> steps(res->step_seconds.begin() + 1, res->step_seconds.end());
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  return steps[steps.size() / 2];
}

report_section reference_step_section(const train_options& opts) {
  return [opts](const train_result&) {
    spdlog::info("measuring the single-process reference's step on this host for the summary");
    return nlohmann::json{{"reference_median_step_seconds", reference_step_seconds(opts)}};
  };
}

}  // namespace cleave
