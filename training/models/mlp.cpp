// A multi-layer perceptron classifier: (linear -> ReLU)* -> linear -> softmax.

#include <cmath>

#include "training/models/model.hpp"
#include "kernels/random.hpp"

namespace cleave {
namespace {

class mlp final : public model {
 public:
  mlp(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng) : model(cfg, eng) {
    std::vector<int64_t> widths{cfg.inputs};
    widths.insert(widths.end(), cfg.hidden.begin(), cfg.hidden.end());
    widths.push_back(cfg.classes);
    rng r(derive_seed(seed, 1));
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      auto& w = add_parameter("fc" + std::to_string(i) + ".w", widths[i], widths[i + 1], true, true);
      // He initialisation for ReLU layers; the logits layer gets Xavier.
      const bool last = i + 2 == widths.size();
      fill_normal(w.value, std::sqrt((last ? 1.0 : 2.0) / static_cast<double>(widths[i])), r);
      add_parameter("fc" + std::to_string(i) + ".b", 1, widths[i + 1], false);
      // Layers pair up: the odd ones are split by rows when sharded.
      if (i % 2 == 1) w.shard_split = shard_axis::rows;
      weights_.push_back(&w);
      biases_.push_back(&params_.back());
    }
    acts_.resize(weights_.size());
    pre_.resize(weights_.size());
  }

  double train_batch(const batch& b) override {
    forward(b.inputs);
    double loss = softmax_xent_forward(pre_.back(), b.targets, probs_);
    softmax_xent_backward(probs_, b.targets, grad_);
    for (size_t i = weights_.size(); i-- > 0;) {
      const tensor& x = i == 0 ? b.inputs : acts_[i - 1];
      linear_backward(*gemm_, static_cast<uint32_t>(i), weights_[i]->id, x, weights_[i]->value, grad_,
                      i == 0 ? nullptr : &grad_in_, weights_[i]->grad, &biases_[i]->grad);
      if (i > 0) relu_backward(pre_[i - 1], grad_in_, grad_);
    }
    return loss;
  }

  eval_totals evaluate(const batch& b) override {
    forward(b.inputs);
    eval_totals out;
    out.rows = b.rows;
    out.loss_sum = softmax_xent_forward(pre_.back(), b.targets, probs_) * b.rows;
    const tensor& logits = pre_.back();
    for (int64_t r = 0; r < logits.rows(); ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < logits.cols(); ++c)
        if (logits.at(r, c) > logits.at(r, best)) best = c;
      out.correct += best == b.targets[static_cast<size_t>(r)];
    }
    return out;
  }

 private:
  void forward(const tensor& inputs) {
    for (size_t i = 0; i < weights_.size(); ++i) {
      const tensor& x = i == 0 ? inputs : acts_[i - 1];
      linear_forward(*gemm_, static_cast<uint32_t>(i), weights_[i]->id, x, weights_[i]->value, &biases_[i]->value,
                     pre_[i]);
      if (i + 1 < weights_.size()) relu_forward(pre_[i], acts_[i]);
    }
  }

  std::vector<parameter*> weights_;
  std::vector<parameter*> biases_;
  std::vector<tensor> pre_;   // pre-activation of each layer; the last holds the logits
  std::vector<tensor> acts_;  // ReLU outputs
  tensor probs_, grad_, grad_in_;
};

}  // namespace

std::unique_ptr<model> make_mlp(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng) {
  return std::make_unique<mlp>(cfg, seed, eng);
}

}  // namespace cleave
