#include <algorithm>

#include "training/data/batches.hpp"

namespace cleave {
namespace {

class xc_data final : public training_data {
 public:
  xc_data(xc_split split, int64_t max_eval_samples) : d_(std::move(split)) {
    eval_samples_ = std::min(d_.test.samples, max_eval_samples);
  }

  int64_t train_samples() const override { return d_.train.samples; }

  void fill_train(const int64_t* ids, int64_t count, batch& out) const override {
    fill(d_.train, ids, count, out);
  }

  int64_t eval_batches(int64_t batch_size) const override {
    return (eval_samples_ + batch_size - 1) / batch_size;
  }

  void fill_eval(int64_t index, int64_t batch_size, batch& out) const override {
    auto ids = eval_batch_ids(index, batch_size, eval_samples_);
    for (auto& i : ids) i = i * d_.test.samples / eval_samples_;  // evenly spaced
    fill(d_.test, ids.data(), static_cast<int64_t>(ids.size()), out);
  }

  bool is_classifier() const override { return true; }
  int64_t xc_features() const override { return d_.train.features; }
  int64_t xc_labels() const override { return d_.train.labels; }

 private:
  static void fill(const sparse_dataset& set, const int64_t* ids, int64_t count, batch& out) {
    out.rows = count;
    out.feature_offsets.assign(1, 0);
    out.label_offsets.assign(1, 0);
    out.feature_ids.clear();
    out.feature_values.clear();
    out.label_ids.clear();
    for (int64_t r = 0; r < count; ++r) {
      const auto i = static_cast<size_t>(ids[r]);
      const auto f0 = set.feature_offsets[i], f1 = set.feature_offsets[i + 1];
      out.feature_ids.insert(out.feature_ids.end(), set.feature_ids.begin() + f0,
                             set.feature_ids.begin() + f1);
      out.feature_values.insert(out.feature_values.end(), set.values.begin() + f0,
                                set.values.begin() + f1);
      out.feature_offsets.push_back(static_cast<int64_t>(out.feature_ids.size()));
      const auto l0 = set.label_offsets[i], l1 = set.label_offsets[i + 1];
      out.label_ids.insert(out.label_ids.end(), set.label_ids.begin() + l0,
                           set.label_ids.begin() + l1);
      out.label_offsets.push_back(static_cast<int64_t>(out.label_ids.size()));
    }
  }

  xc_split d_;
  int64_t eval_samples_ = 0;
};

}  // namespace

std::unique_ptr<training_data> make_xc_data(xc_split split, int64_t max_eval_samples) {
  return std::make_unique<xc_data>(std::move(split), max_eval_samples);
}

}  // namespace cleave
