#pragma once
// The training loop a coordinating PS runs: data order, steps, the AdamW
// update, learning-rate schedule, checkpoints, progress and the final
// evaluation. Plain C++: it multiplies through whatever gemm_engine the
// caller gives it and updates through whatever parameter_store, so the same
// loop is the single-process reference and the distributed run.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "schema/checkpoint_file.hpp"
#include "training/checkpoint_policy.hpp"
#include "training/data/batches.hpp"
#include "training/models/model.hpp"
#include "training/parameter_store.hpp"

namespace cleave {

struct train_options {
  model_config model;
  std::string dataset;  // "fashion-mnist", "fortunes", or for xc "gcide-nextword", "spell-670k", "xc:DIR"
  std::string data_dir;
  int64_t epochs = 5;
  int64_t steps = 0;  // > 0: stop after this many steps, overriding epochs
  int64_t batch = 64;
  adamw_config adamw;
  int64_t warmup = 0;      // linear warm-up steps, then cosine decay to lr / 10
  uint64_t seed = 1;
  int64_t eval_tokens = 131072;  // language models: validation tokens scored
  int64_t eval_samples = 10000;  // xc: test samples scored
  xc_settings xc;                // xc: sparse mode or the dense full softmax
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;  // 0: only at the end (when a directory is set)
  bool resume = false;
  on_checkpoint_error checkpoint_errors = on_checkpoint_error::stop;  // a checkpoint that cannot be written
  double progress_seconds = 5;
};

struct train_result {
  model_config model;             // the shape trained (xc: sized by its data)
  int64_t steps = 0;              // optimizer steps taken in total
  int64_t resumed_from_step = 0;  // 0 unless --resume found a checkpoint
  uint64_t restarts = 0;          // resumes from checkpoints over the whole training
  int64_t checkpoint_failures = 0;  // checkpoints of this run that could not be written
  // Set when the final checkpoint could not be written under
  // --on-checkpoint-error=continue: the run finished, and ends with this error.
  std::string unsaved_final;
  double epochs = 0;              // epochs of data consumed (fractional)
  double final_train_loss = 0;    // loss of the last step
  double mean_step_seconds = 0;   // training steps of this run only
  double median_step_seconds = 0;
  std::vector<double> losses;     // every step of this run, in order
  std::vector<double> step_seconds;  // wall time of every step of this run
  double eval_seconds = 0;        // the final evaluation
  bool classifier = false;
  double test_accuracy = 0;
  double test_loss = 0;
  double val_loss = 0;
  double unigram_loss = 0;
  int64_t parameters = 0;
  // xc: precision at 1 and 5 on the test split; mean active set over the
  // labels and model-let bytes per sample over this run's training steps.
  double p_at_1 = 0, p_at_5 = 0;
  double active_fraction = 0, sparse_bytes_per_sample = 0;
};

// Loads the dataset named in opts (errors name the file and the problem).
caf::expected<std::unique_ptr<training_data>> load_training_data(const train_options& opts);

class trainer {
 public:
  // `store` keeps and updates the model's parameters; for the sharded PS it
  // is also `eng`.
  trainer(train_options opts, training_data& data, gemm_engine<float>& eng, parameter_store& store);

  // Runs to the end (steps or epochs); on --resume continues from the newest
  // valid checkpoint in checkpoint_dir.
  caf::expected<train_result> run();

  // Called before every step (0-based step index); an error stops training.
  // The distributed runtime refreshes its fleet here.
  std::function<caf::error(int64_t)> before_step;
  // Called once after the last training step, before the final evaluation.
  std::function<void()> after_training;
  // Called before every batch of the final evaluation (0-based index). The
  // distributed runtime lets go of the previous batch's operands here, as a
  // new step does.
  std::function<void(int64_t)> before_evaluation_batch;
  // Called after every step with (step, loss); the runtime hooks accounting here.
  std::function<void(int64_t, double)> on_step;
  // Called between steps (0-based index of the step to come), before its
  // clock starts, so a wait here (an operator's pause) is no step's time.
  // True asks for a checkpoint at once; it is written when the run has a
  // checkpoint directory.
  std::function<bool(int64_t)> between_steps;
  // Called with the step and path of every checkpoint written.
  std::function<void(int64_t, const std::string&)> on_checkpoint;
  // Called when a step or a checkpoint failed with a PS shard process lost
  // (the reason): none once every shard is back, and the run then rolls
  // back to the newest checkpoint (as --resume) and goes on; an error stops
  // the run with it. Unset: the failure stops the run.
  std::function<caf::error(const std::string&)> recover;
  // PS shard processes that write their own slices
  // (actors/ps/shards/shard_checkpoints.hpp): a checkpoint asks them to, instead of
  // gathering the moments, and the coordinator's file, written once they
  // all answered, names their files. An error is a shard's failure (a lost
  // one rolls the run back).
  std::function<caf::expected<shard_set>(int64_t step)> checkpoint_shards;
  // Whether a PS shard process is lost now. A checkpoint_shards error with
  // none lost is a failed write (a shard's full disk), which
  // --on-checkpoint-error decides on, not a loss to roll back from. Unset:
  // every checkpoint_shards error is a loss.
  std::function<bool()> shards_lost;
  // Makes a checkpoint whose moments are in shard files (ck.shards.count >
  // 0) loadable: the shards load their own files, or the moments are read
  // whole into ck. An error skips that set with a warning, and the next
  // older one is tried. Unset: such sets are skipped.
  std::function<caf::error(checkpoint& ck, std::deque<parameter>& params)> restore_shards;

 private:
  caf::error restore();
  caf::error save();
  // After a shard was lost: the shards back (recover), the newest checkpoint
  // restored and attached again; or why the run must stop.
  caf::error roll_back(const std::string& why);
  // A checkpoint that could not be written (not a lost shard): logs and
  // returns none to go on, or the error that ends the run.
  caf::error unsaved(const caf::error& why, bool last, train_result& res);
  double learning_rate(int64_t step) const;
  eval_totals evaluate();

  train_options opts_;
  training_data& data_;
  gemm_engine<float>& gemm_;
  std::unique_ptr<model> model_;
  parameter_store& store_;
  int64_t steps_per_epoch_ = 0;
  int64_t total_steps_ = 0;
  // position
  int64_t step_ = 0;
  int64_t epoch_ = 0;
  int64_t index_in_epoch_ = 0;
  uint64_t restarts_ = 0;  // resumes so far, carried in checkpoints
  bool shard_lost_ = false;  // the last save() failed on a PS shard
  caf::error init_error_;
};

}  // namespace cleave
