#include "training/data/batches.hpp"

#include <algorithm>
#include <cmath>

namespace cleave {
namespace {

class image_data final : public training_data {
 public:
  explicit image_data(fashion_mnist d) : d_(std::move(d)) {
    const auto& px = d_.train.pixels;
    double sum = 0, sq = 0;
    for (auto p : px) {
      sum += p;
      sq += double(p) * p;
    }
    const double n = static_cast<double>(px.size());
    mean_ = sum / n;
    inv_std_ = 1.0 / std::sqrt(std::max(1e-12, sq / n - mean_ * mean_));
  }

  int64_t train_samples() const override { return d_.train.count; }

  void fill_train(const int64_t* ids, int64_t count, batch& out) const override {
    fill(d_.train, ids, count, out);
  }

  int64_t eval_batches(int64_t batch_size) const override {
    return (d_.test.count + batch_size - 1) / batch_size;
  }

  void fill_eval(int64_t index, int64_t batch_size, batch& out) const override {
    const auto ids = eval_batch_ids(index, batch_size, d_.test.count);
    fill(d_.test, ids.data(), static_cast<int64_t>(ids.size()), out);
  }

  bool is_classifier() const override { return true; }

 private:
  void fill(const image_set& set, const int64_t* ids, int64_t count, batch& out) const {
    const int64_t dim = set.height * set.width;
    out.rows = count;
    out.inputs.resize(count, dim);
    out.targets.resize(static_cast<size_t>(count));
    for (int64_t r = 0; r < count; ++r) {
      const uint8_t* src = set.pixels.data() + ids[r] * dim;
      float* dst = out.inputs.data() + r * dim;
      for (int64_t c = 0; c < dim; ++c) dst[c] = static_cast<float>((src[c] - mean_) * inv_std_);
      out.targets[static_cast<size_t>(r)] = set.labels[static_cast<size_t>(ids[r])];
    }
  }

  fashion_mnist d_;
  double mean_ = 0;
  double inv_std_ = 1;
};

class text_data final : public training_data {
 public:
  text_data(text_corpus c, int64_t context, int64_t max_eval_tokens)
      : c_(std::move(c)), context_(context) {
    const auto val_windows = static_cast<int64_t>(c_.val.size() - 1) / context_;
    eval_windows_ = std::min(val_windows, std::max<int64_t>(1, max_eval_tokens / context_));
  }

  int64_t train_samples() const override {
    return static_cast<int64_t>(c_.train.size() - 1) / context_;
  }

  void fill_train(const int64_t* ids, int64_t count, batch& out) const override {
    fill(c_.train, ids, count, out);
  }

  int64_t eval_batches(int64_t batch_size) const override {
    return (eval_windows_ + batch_size - 1) / batch_size;
  }

  void fill_eval(int64_t index, int64_t batch_size, batch& out) const override {
    const auto ids = eval_batch_ids(index, batch_size, eval_windows_);
    fill(c_.val, ids.data(), static_cast<int64_t>(ids.size()), out);
  }

  bool is_classifier() const override { return false; }
  double unigram_loss() const override {
    std::vector<double> counts(256, 1.0);
    for (auto b : c_.train) counts[b] += 1;
    const double total = static_cast<double>(c_.train.size()) + 256.0;
    double loss = 0;
    const int64_t tokens = eval_windows_ * context_;
    for (int64_t w = 0; w < eval_windows_; ++w)
      for (int64_t t = 1; t <= context_; ++t)
        loss -= std::log(counts[c_.val[static_cast<size_t>(w * context_ + t)]] / total);
    return loss / static_cast<double>(tokens);
  }

 private:
  // Window i covers bytes [i*context, i*context + context]; inputs are its
  // first context bytes and targets the next byte of each.
  void fill(const std::vector<uint8_t>& text, const int64_t* ids, int64_t count,
            batch& out) const {
    out.rows = count * context_;
    out.tokens.resize(static_cast<size_t>(out.rows));
    out.targets.resize(static_cast<size_t>(out.rows));
    for (int64_t r = 0; r < count; ++r) {
      const uint8_t* src = text.data() + ids[r] * context_;
      for (int64_t t = 0; t < context_; ++t) {
        out.tokens[static_cast<size_t>(r * context_ + t)] = src[t];
        out.targets[static_cast<size_t>(r * context_ + t)] = src[t + 1];
      }
    }
  }

  text_corpus c_;
  int64_t context_;
  int64_t eval_windows_ = 0;
};

}  // namespace

std::vector<int64_t> eval_batch_ids(int64_t index, int64_t batch_size, int64_t total) {
  const int64_t first = index * batch_size;
  const int64_t count = std::max<int64_t>(0, std::min(batch_size, total - first));
  std::vector<int64_t> ids(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) ids[static_cast<size_t>(i)] = first + i;
  return ids;
}

std::unique_ptr<training_data> make_image_data(fashion_mnist data) {
  return std::make_unique<image_data>(std::move(data));
}

std::unique_ptr<training_data> make_text_data(text_corpus corpus, int64_t context,
                                              int64_t max_eval_tokens) {
  return std::make_unique<text_data>(std::move(corpus), context, max_eval_tokens);
}

}  // namespace cleave
