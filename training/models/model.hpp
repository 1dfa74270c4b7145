#pragma once
// The models a PS trains. A model owns its parameters (value, gradient and
// AdamW moments side by side) and runs forward and backward over a batch,
// sending every matrix product through the gemm_engine it was given: the
// local engine for reference training, the runtime's engine when devices
// take the tiles.

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "training/models/parameter.hpp"
#include "training/models/xc_settings.hpp"
#include "schema/model_config.hpp"

namespace cleave {

// One batch. Classifiers use `inputs` [rows, features] and `targets`;
// language models use `tokens` and `targets` (rows = batch * context); the
// extreme classifier uses the CSR rows below (row r's features are
// [feature_offsets[r], feature_offsets[r+1]), its labels likewise).
struct batch {
  int64_t rows = 0;
  tensor inputs;
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets;
  std::vector<int64_t> feature_offsets, label_offsets;
  std::vector<int32_t> feature_ids, label_ids;
  std::vector<float> feature_values;
};

struct eval_totals {
  double loss_sum = 0;  // summed over rows
  int64_t correct = 0;  // classifiers only (xc: rows whose top score is one of their labels)
  double precision_at_5_sum = 0;  // xc only: summed over rows
  int64_t rows = 0;
};

// What sparse mode moved and touched over the training steps so far.
struct sparse_traffic {
  int64_t samples = 0;
  double active_sum = 0;  // output neurons active, summed over samples
  double bytes_sum = 0;   // model-let bytes (see xc.cpp), summed over samples
};

class model {
 public:
  virtual ~model() = default;

  const model_config& config() const { return config_; }
  // A deque, so references handed out by add_parameter stay valid.
  std::deque<parameter>& parameters() { return params_; }
  const std::deque<parameter>& parameters() const { return params_; }
  int64_t parameter_count() const;

  void set_gemm_engine(gemm_engine<float>& eng) { gemm_ = &eng; }

  // Forward and backward over b; adds into each parameter's grad and returns
  // the batch's mean loss.
  virtual double train_batch(const batch& b) = 0;

  // Forward only.
  virtual eval_totals evaluate(const batch& b) = 0;

  // The store has applied optimizer step `step` (1-based): state derived
  // from the weights (sparse mode's hash tables) follows them here.
  virtual void after_update(int64_t /*step*/) {}
  // A checkpoint taken after step `step` replaced the parameters' values.
  virtual void restored(int64_t /*step*/) {}
  // Parameters the model keeps elsewhere than the store (sparse mode's
  // model-lets on devices): the sum of squares of their gradients from the
  // last train_batch, added into the global norm for clipping, and their
  // AdamW step, run after the store's.
  virtual double external_sum_of_squares() const { return 0; }
  virtual void update_external(const adamw_config& /*cfg*/, int64_t /*t*/, double /*grad_scale*/) {}
  // Brings those parameters' values and moments home into parameters(): a
  // checkpoint or an evaluation is about to read them. Throws
  // std::runtime_error when they cannot be had (model-lets lost for good).
  virtual void sync_external() {}
  // Sparse mode's figures; null for the dense models.
  virtual const sparse_traffic* traffic() const { return nullptr; }

 protected:
  model(model_config cfg, gemm_engine<float>& eng) : config_(std::move(cfg)), gemm_(&eng) {}
  // `product_weight`: only products with its id read it and make its
  // gradient (a linear layer's matrix).
  parameter& add_parameter(std::string name, int64_t rows, int64_t cols, bool decay, bool product_weight = false);

  model_config config_;
  gemm_engine<float>* gemm_;
  std::deque<parameter> params_;
};

// Validates cfg (positive sizes, heads dividing d_model, ...) and builds the
// model with weights drawn from seed; `xc` configures the extreme classifier.
caf::expected<std::unique_ptr<model>> make_model(const model_config& cfg, uint64_t seed,
                                                 gemm_engine<float>& eng,
                                                 const xc_settings& xc = {});

// Named transformer shapes: "small" (the default) and opt-125m ... opt-30b
// (hidden / layers / heads / ffn as in shared/anchors/cloud-gpu.md).
caf::expected<model_config> gpt_preset(const std::string& name, int64_t vocab, int64_t context);

}  // namespace cleave
