#pragma once
// Turns a loaded dataset into numbered training samples and evaluation
// batches. Sample order is the trainer's business; this only fills batches.

#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "training/data/datasets.hpp"
#include "training/data/xc_format.hpp"
#include "training/models/model.hpp"

namespace cleave {

class training_data {
 public:
  virtual ~training_data() = default;
  // Number of training samples (images, or context windows of text).
  virtual int64_t train_samples() const = 0;
  virtual void fill_train(const int64_t* ids, int64_t count, batch& out) const = 0;
  // Evaluation is over fixed, ordered batches: eval_batches() of them.
  virtual int64_t eval_batches(int64_t batch_size) const = 0;
  virtual void fill_eval(int64_t index, int64_t batch_size, batch& out) const = 0;
  virtual bool is_classifier() const = 0;
  // Language models only: cross-entropy of the evaluation tokens under the
  // training set's byte frequencies (add-one smoothed).
  virtual double unigram_loss() const { return 0; }
  // Extreme classification: the features and labels the model's input and
  // output layers span (0 for the other data).
  virtual int64_t xc_features() const { return 0; }
  virtual int64_t xc_labels() const { return 0; }
};

// The sample numbers of evaluation batch `index` when `total` samples are cut
// into batches of batch_size (the last one may be short).
std::vector<int64_t> eval_batch_ids(int64_t index, int64_t batch_size, int64_t total);

// Pixels are standardised with the training set's mean and deviation.
std::unique_ptr<training_data> make_image_data(fashion_mnist data);

// Non-overlapping windows of context + 1 bytes; evaluation uses at most
// max_eval_tokens of the validation split.
std::unique_ptr<training_data> make_text_data(text_corpus corpus, int64_t context,
                                              int64_t max_eval_tokens);

// Extreme classification: batches of CSR rows (features and labels).
// Evaluation scores at most max_eval_samples test samples, evenly spaced
// over the test split (its files run in the order the task was built in).
std::unique_ptr<training_data> make_xc_data(xc_split split, int64_t max_eval_samples);

}  // namespace cleave
