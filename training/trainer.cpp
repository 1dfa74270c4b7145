#include "training/trainer.hpp"

#include <algorithm>
#include <stdexcept>
#include <chrono>
#include <cmath>

#include <spdlog/spdlog.h>

#include "training/elapsed.hpp"
#include "kernels/random.hpp"
#include "schema/checkpoint_file.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto total = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (total >= 3600)
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60));
  else
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  return buf;
}

}  // namespace

caf::expected<std::unique_ptr<training_data>> load_training_data(const train_options& opts) {
  if (is_xc_dataset(opts.dataset)) {
    if (opts.model.kind != "xc") return fail("dataset " + opts.dataset + " needs --model=xc");
    auto split = load_xc_dataset(opts.dataset, opts.data_dir.empty() ? default_xc_data_dir() : opts.data_dir);
    if (!split) return split.error();
    return make_xc_data(std::move(*split), opts.eval_samples);
  }
  if (opts.model.kind == "xc")
    return fail("--model=xc needs an extreme-classification dataset (gcide-nextword, spell-670k or "
                "xc:DIR), got '" + opts.dataset + "'");
  if (opts.dataset == "fashion-mnist") {
    if (opts.model.kind != "mlp") return fail("dataset fashion-mnist needs --model=mlp");
    auto d = load_fashion_mnist(opts.data_dir.empty() ? default_fashion_mnist_dir : opts.data_dir);
    if (!d) return d.error();
    if (d->train.height * d->train.width != opts.model.inputs)
      return fail("fashion-mnist images have " + std::to_string(d->train.height * d->train.width)
                  + " pixels but the mlp expects " + std::to_string(opts.model.inputs) + " inputs");
    return make_image_data(std::move(*d));
  }
  if (opts.dataset == "fortunes") {
    if (opts.model.kind != "gpt") return fail("dataset fortunes needs --model=gpt");
    if (opts.model.vocab < 256) return fail("byte-level text needs a gpt vocabulary of >= 256");
    auto c = load_fortunes(opts.data_dir.empty() ? default_fortunes_dir : opts.data_dir);
    if (!c) return c.error();
    return make_text_data(std::move(*c), opts.model.context, opts.eval_tokens);
  }
  return fail("unknown dataset '" + opts.dataset
              + "' (expected fashion-mnist, fortunes, gcide-nextword, spell-670k or xc:DIR)");
}

trainer::trainer(train_options opts, training_data& data, gemm_engine<float>& eng,
                 parameter_store& store)
    : opts_(std::move(opts)), data_(data), gemm_(eng), store_(store) {
  if (opts_.model.kind == "xc") {
    opts_.model.inputs = data_.xc_features();
    opts_.model.classes = data_.xc_labels();
  }
  auto m = make_model(opts_.model, opts_.seed, gemm_, opts_.xc);
  if (!m) {
    init_error_ = m.error();
    return;
  }
  model_ = std::move(*m);
  steps_per_epoch_ = data_.train_samples() / std::max<int64_t>(1, opts_.batch);
  total_steps_ = opts_.steps > 0 ? opts_.steps : opts_.epochs * steps_per_epoch_;
}

double trainer::learning_rate(int64_t step) const {
  // step counts from 0 here; the schedule is a pure function of it, so a
  // resumed run sees exactly the rates the uninterrupted run saw.
  const double peak = opts_.adamw.lr;
  if (step < opts_.warmup) return peak * static_cast<double>(step + 1) / opts_.warmup;
  const double span = std::max<int64_t>(1, total_steps_ - opts_.warmup);
  const double progress = std::min(1.0, static_cast<double>(step - opts_.warmup) / span);
  return peak * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(3.141592653589793 * progress)));
}

caf::error trainer::save() {
  shard_set set;
  try {
    model_->sync_external();  // model-lets on devices: their copy at the PS, as of this step
    if (checkpoint_shards) {
      auto written = checkpoint_shards(step_);
      if (!written) {
        shard_lost_ = !shards_lost || shards_lost();
        return shard_lost_ ? fail("checkpoint at step " + std::to_string(step_) + ": " + describe(written.error()))
                           : written.error();
      }
      set = std::move(*written);
    } else {
      store_.gather_moments();
    }
  } catch (const std::runtime_error& e) {  // a device or a PS shard process lost
    shard_lost_ = true;
    return fail("checkpoint at step " + std::to_string(step_) + ": " + e.what());
  }
  checkpoint ck;
  ck.model = opts_.model;
  ck.dataset = opts_.dataset;
  ck.seed = opts_.seed;
  ck.batch = static_cast<uint64_t>(opts_.batch);
  ck.step = static_cast<uint64_t>(step_);
  ck.epoch = static_cast<uint64_t>(epoch_);
  ck.index_in_epoch = static_cast<uint64_t>(index_in_epoch_);
  ck.restarts = restarts_;
  for (const auto& p : model_->parameters())
    ck.parameters.push_back(set.count > 0 ? parameter_state{p.name, p.value, {}, {}}
                                          : parameter_state{p.name, p.value, p.adam_m, p.adam_v});
  store_.forget_moments();  // ck has its copy
  ck.shards = std::move(set);
  auto path = write_checkpoint(opts_.checkpoint_dir, ck);
  if (!path) return path.error();
  spdlog::debug("checkpoint written: {}", *path);
  if (on_checkpoint) on_checkpoint(step_, *path);
  return caf::none;
}

caf::error trainer::unsaved(const caf::error& why, bool last, train_result& res) {
  ++res.checkpoint_failures;
  const auto on_disk = list_checkpoints(opts_.checkpoint_dir);
  auto verdict = after_failed_checkpoint(opts_.checkpoint_errors, step_, describe(why),
                                         on_disk.empty() ? std::string() : on_disk.front(), last);
  switch (verdict.action) {
    case checkpoint_failure_verdict::stop: return fail(verdict.line);
    case checkpoint_failure_verdict::fail_at_end: res.unsaved_final = verdict.line; break;  // the exit's line
    case checkpoint_failure_verdict::go_on: spdlog::error("{}", verdict.line); break;
  }
  return caf::none;
}

caf::error trainer::roll_back(const std::string& why) {
  if (!recover || opts_.checkpoint_dir.empty()) return fail(why);
  if (auto err = recover(why)) return err;
  if (list_checkpoints(opts_.checkpoint_dir).empty())
    return fail(why + "; the shards are back, but there is no checkpoint in " + opts_.checkpoint_dir
                + " to roll back to");
  if (auto err = restore()) return err;
  try {
    if (auto err = store_.attach(model_->parameters())) return err;
  } catch (const std::runtime_error& e) {
    return fail(std::string("attaching the shards again: ") + e.what());
  }
  spdlog::warn("rolled back to step {}: every PS shard has the checkpoint's slices again", step_);
  return caf::none;
}

caf::error trainer::restore() {
  auto files = list_checkpoints(opts_.checkpoint_dir);
  if (files.empty()) {
    spdlog::info("--resume: no checkpoint in {}, starting from step 0", opts_.checkpoint_dir);
    return caf::none;
  }
  auto& params = model_->parameters();
  checkpoint ck;
  auto take = [&](const std::string& path) -> checkpoint_candidate {
    auto read = read_checkpoint(path);
    if (!read) return {checkpoint_candidate::skipped, fail("refusing checkpoint " + describe(read.error()))};
    ck = std::move(*read);
    if (ck.model != opts_.model)
      return {checkpoint_candidate::refused,
              fail(path + " was written for model '" + to_string(ck.model) + "', this run is '"
                   + to_string(opts_.model) + "'")};
    if (ck.dataset != opts_.dataset || ck.seed != opts_.seed || ck.batch != static_cast<uint64_t>(opts_.batch))
      return {checkpoint_candidate::refused,
              fail(path + " was written for dataset=" + ck.dataset + " seed=" + std::to_string(ck.seed)
                   + " batch=" + std::to_string(ck.batch) + "; this run has dataset=" + opts_.dataset
                   + " seed=" + std::to_string(opts_.seed) + " batch=" + std::to_string(opts_.batch))};
    if (ck.parameters.size() != params.size())
      return {checkpoint_candidate::refused,
              fail(path + ": holds " + std::to_string(ck.parameters.size()) + " parameters, the model has "
                   + std::to_string(params.size()))};
    for (size_t i = 0; i < params.size(); ++i) {
      auto& dst = params[i];
      auto& src = ck.parameters[i];
      auto same_shape = [&](const tensor& t) { return t.rows() == dst.value.rows() && t.cols() == dst.value.cols(); };
      // A set's moments are in its shards' files.
      const bool moments_in_shards = ck.shards.count > 0 && src.adam_m.size() == 0 && src.adam_v.size() == 0;
      if (src.name != dst.name || !same_shape(src.value)
          || (!moments_in_shards && (!same_shape(src.adam_m) || !same_shape(src.adam_v))))
        return {checkpoint_candidate::refused,
                fail(path + ": parameter " + src.name + " does not match the model's " + dst.name)};
    }
    if (ck.shards.count > 0) {
      auto err = restore_shards ? restore_shards(ck, params)
                                : fail("its AdamW moments are in PS shard files this run cannot read");
      if (err)
        return {checkpoint_candidate::skipped, fail("skipping the checkpoint set of step " + std::to_string(ck.step)
                                                    + " (" + path + "): " + describe(err))};
    }
    return {checkpoint_candidate::taken, {}};
  };
  auto path = newest_valid_checkpoint(files, opts_.checkpoint_dir, take);
  if (!path) return path.error();
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].value = std::move(ck.parameters[i].value);
    // Left empty when the shards loaded their own moments; the whole
    // tensors here are then never read.
    if (ck.parameters[i].adam_m.size() > 0 || params[i].adam_m.size() == 0) {
      params[i].adam_m = std::move(ck.parameters[i].adam_m);
      params[i].adam_v = std::move(ck.parameters[i].adam_v);
    }
  }
  step_ = static_cast<int64_t>(ck.step);
  epoch_ = static_cast<int64_t>(ck.epoch);
  index_in_epoch_ = static_cast<int64_t>(ck.index_in_epoch);
  restarts_ = ck.restarts + 1;
  model_->restored(step_);
  spdlog::info("resumed from {} at step {}", *path, step_);
  return caf::none;
}

eval_totals trainer::evaluate() {
  eval_totals sum;
  batch b;
  const int64_t n = data_.eval_batches(opts_.batch);
  for (int64_t i = 0; i < n; ++i) {
    if (before_evaluation_batch) before_evaluation_batch(i);
    data_.fill_eval(i, opts_.batch, b);
    auto t = model_->evaluate(b);
    sum.loss_sum += t.loss_sum;
    sum.correct += t.correct;
    sum.precision_at_5_sum += t.precision_at_5_sum;
    sum.rows += t.rows;
  }
  return sum;
}

caf::expected<train_result> trainer::run() {
  if (init_error_) return init_error_;
  if (opts_.batch <= 0) return fail("--batch must be positive");
  if (steps_per_epoch_ == 0)
    return fail("the training set has " + std::to_string(data_.train_samples())
                + " samples, fewer than one batch of " + std::to_string(opts_.batch));
  if (data_.eval_batches(opts_.batch) == 0)
    return fail("the evaluation split is too small for one batch");
  if (total_steps_ <= 0) return fail("nothing to do: --epochs and --steps are both 0");
  const bool checkpoints = !opts_.checkpoint_dir.empty();
  if (opts_.resume) {
    if (!checkpoints) return fail("--resume needs --checkpoint-dir");
    if (auto err = restore()) return err;
  }
  try {
    if (auto err = store_.attach(model_->parameters())) return err;
  } catch (const std::runtime_error& e) {  // a PS shard process refused or lost
    return fail(e.what());
  }

  train_result res;
  res.model = opts_.model;
  res.classifier = data_.is_classifier();
  res.parameters = model_->parameter_count();
  res.resumed_from_step = step_;
  res.restarts = restarts_;
  spdlog::info("training {} ({} parameters) on {}: {} steps of batch {}, {} steps per epoch",
               to_string(opts_.model), res.parameters, opts_.dataset, total_steps_, opts_.batch,
               steps_per_epoch_);

  std::vector<int64_t> order = permutation(data_.train_samples(), derive_seed(opts_.seed, 100 + epoch_));
  batch b;
  std::vector<double> step_seconds;
  auto last_report = clock_type::now();
  const auto run_start = clock_type::now();
  const int64_t first_step = step_;

  while (step_ < total_steps_) {
    if (index_in_epoch_ + opts_.batch > static_cast<int64_t>(order.size())) {
      ++epoch_;
      index_in_epoch_ = 0;
      order = permutation(data_.train_samples(), derive_seed(opts_.seed, 100 + epoch_));
    }
    // A step or checkpoint that lost a PS shard process: roll back (or stop).
    auto rolled_back = [&](const caf::error& failure) -> caf::error {
      if (auto err = roll_back(describe(failure))) return err;
      const auto done = static_cast<size_t>(std::max<int64_t>(0, step_ - first_step));
      res.losses.resize(std::min(done, res.losses.size()));
      step_seconds.resize(std::min(done, step_seconds.size()));
      order = permutation(data_.train_samples(), derive_seed(opts_.seed, 100 + epoch_));
      return caf::none;
    };
    auto saved = [&](bool last) -> caf::error {
      shard_lost_ = false;
      auto err = save();
      if (!err) return caf::none;
      return shard_lost_ ? rolled_back(err) : unsaved(err, last, res);
    };
    if (between_steps && between_steps(step_) && checkpoints)
      if (auto err = saved(false)) return err;
    const auto t0 = clock_type::now();
    if (before_step)
      if (auto err = before_step(step_)) return err;
    data_.fill_train(order.data() + index_in_epoch_, opts_.batch, b);
    double loss = 0;
    try {
      store_.zero_grads();
      loss = model_->train_batch(b);
    } catch (const std::runtime_error& e) {  // model-lets or a PS shard process lost
      if (auto err = rolled_back(fail("step " + std::to_string(step_ + 1) + ": " + e.what()))) return err;
      continue;
    }
    if (!std::isfinite(loss))
      return fail("training diverged: loss is " + std::to_string(loss) + " at step "
                  + std::to_string(step_ + 1) + " (try a lower --lr)");
    adamw_config cfg = opts_.adamw;
    cfg.lr = learning_rate(step_);
    try {
      const double scale = clip_scale(
        std::sqrt(store_.reduce_gradients() + model_->external_sum_of_squares()), opts_.adamw.clip_norm);
      store_.update(cfg, step_ + 1, scale);
      model_->update_external(cfg, step_ + 1, scale);
    } catch (const std::runtime_error& e) {
      if (auto err = rolled_back(fail("step " + std::to_string(step_ + 1) + ": " + e.what()))) return err;
      continue;
    }
    model_->after_update(step_ + 1);
    ++step_;
    index_in_epoch_ += opts_.batch;
    step_seconds.push_back(seconds_since(t0));
    res.losses.push_back(loss);
    if (on_step) on_step(step_, loss);

    if (checkpoints && opts_.checkpoint_every > 0 && step_ % opts_.checkpoint_every == 0)
      if (auto err = saved(step_ == total_steps_)) return err;

    if (seconds_since(last_report) >= opts_.progress_seconds || step_ == total_steps_) {
      last_report = clock_type::now();
      const double rate = static_cast<double>(step_ - first_step) / seconds_since(run_start);
      spdlog::info("step {}/{} epoch {:.2f} loss {:.4f} {:.2f} steps/s ETA {}", step_,
                   total_steps_,
                   epoch_ + static_cast<double>(index_in_epoch_) / (steps_per_epoch_ * opts_.batch),
                   loss, rate, format_duration((total_steps_ - step_) / rate));
    }
  }
  if (checkpoints && (opts_.checkpoint_every <= 0 || step_ % opts_.checkpoint_every != 0)) {
    shard_lost_ = false;
    if (auto err = save()) {
      if (shard_lost_) return err;  // no step left to roll back for
      if (auto stop = unsaved(err, true, res)) return stop;
    }
  }

  res.steps = step_;
  res.epochs = epoch_ + static_cast<double>(index_in_epoch_) / (steps_per_epoch_ * opts_.batch);
  res.final_train_loss = res.losses.empty() ? 0 : res.losses.back();
  res.step_seconds = step_seconds;
  if (!step_seconds.empty()) {
    double sum = 0;
    for (double s : step_seconds) sum += s;
    res.mean_step_seconds = sum / static_cast<double>(step_seconds.size());
    std::nth_element(step_seconds.begin(), step_seconds.begin() + step_seconds.size() / 2,
                     step_seconds.end());
    res.median_step_seconds = step_seconds[step_seconds.size() / 2];
  }

  if (after_training) after_training();
  spdlog::info("evaluating");
  const auto eval_start = clock_type::now();
  eval_totals ev;
  try {
    ev = evaluate();
  } catch (const std::runtime_error& e) {  // model-lets lost beyond recovery
    return fail(std::string("evaluating: ") + e.what());
  }
  res.eval_seconds = seconds_since(eval_start);
  if (const sparse_traffic* tr = model_->traffic(); tr && tr->samples > 0) {
    res.active_fraction = tr->active_sum / tr->samples / static_cast<double>(opts_.model.classes);
    res.sparse_bytes_per_sample = tr->bytes_sum / tr->samples;
  }
  if (opts_.model.kind == "xc") {
    res.p_at_1 = static_cast<double>(ev.correct) / ev.rows;
    res.p_at_5 = ev.precision_at_5_sum / ev.rows;
    res.test_accuracy = res.p_at_1;
    res.test_loss = ev.loss_sum / ev.rows;
    spdlog::info("test P@1 {:.4f}, P@5 {:.4f}, test loss {:.4f}; active fraction {:.4f}, {:.0f} "
                 "model-let bytes per sample", res.p_at_1, res.p_at_5, res.test_loss,
                 res.active_fraction, res.sparse_bytes_per_sample);
  } else if (res.classifier) {
    res.test_accuracy = static_cast<double>(ev.correct) / ev.rows;
    res.test_loss = ev.loss_sum / ev.rows;
    spdlog::info("test accuracy {:.4f}, test loss {:.4f}", res.test_accuracy, res.test_loss);
  } else {
    res.val_loss = ev.loss_sum / ev.rows;
    res.unigram_loss = data_.unigram_loss();
    spdlog::info("validation loss {:.4f} (unigram baseline {:.4f}, {:.1f}% below)", res.val_loss,
                 res.unigram_loss, 100.0 * (1.0 - res.val_loss / res.unigram_loss));
  }
  return res;
}

}  // namespace cleave
