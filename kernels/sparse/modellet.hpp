#pragma once
// A model-let (D-SLIDE): a contiguous range [begin, end) of a wide output
// layer's neurons, with their weights, biases, AdamW moments and an LSH index
// of its own, that a device holds. Pure: the device actor only decodes
// frames into these calls and encodes the answers.
//
// A step, from the device's side:
//   forward(h, labels)  -> per sample, the active (global neuron id, logit)
//                          pairs of this range and their partial softmax stats;
//   backward(dlogits)   -> this range's partial gradient for the hidden layer
//                          (the PS sums the ranges') and the sum of squares of
//                          its own parameter gradients (for global clipping);
//   update(t, scale)    -> lazy AdamW on the rows the step touched, then the
//                          index refresh the schedule asks for at step t.
// The softmax over the union of every range's active set is the PS's
// (softmax_combine.hpp): merged stats give the exact normaliser.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/lsh/lsh_index.hpp"
#include "kernels/ops.hpp"
#include "kernels/sparse/sparse_ops.hpp"
#include "kernels/tensor.hpp"

namespace cleave {

// How a model-let picks each sample's active neurons.
struct modellet_sampling {
  lsh_config lsh;  // the run's; each range's seed is derived from it and `begin`
  int32_t bucket_size = 128;
  bucket_policy policy = bucket_policy::fifo;
  lsh_schedule schedule{50, 1000, 1.0};
  // Active neurons per sample in this range at least (random top-up); a
  // range's share of the layer's min_active. >= end - begin: every neuron.
  int32_t min_active = 1;
  uint64_t seed = 0;  // the top-up's draws: (seed, step, sample)
};

// One range's answer for a batch of n samples: sample r's pairs are
// [offsets[r], offsets[r+1]) of ids (global, ascending) and logits.
struct modellet_scores {
  std::vector<int64_t> offsets;  // n + 1
  std::vector<int32_t> ids;
  std::vector<float> logits;
  std::vector<softmax_stats> stats;  // n
  int64_t samples() const { return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1; }
};

// Labels of a batch in CSR form (global ids), as the data reader gives them.
struct label_rows {
  const int64_t* offsets = nullptr;  // n + 1
  const int32_t* ids = nullptr;
  int64_t n = 0;
};

// What a model-let holds, as it travels to a device or back to the PS's copy.
struct modellet_state {
  int32_t begin = 0, end = 0;
  int64_t hidden = 0;
  int64_t step = 0;  // optimizer steps applied to these values
  tensor w, b, m_w, v_w, m_b, v_b;  // [end - begin, hidden] / [end - begin, 1]
};

class modellet {
 public:
  // Takes the range's values and moments; builds its index over the weights
  // as of step state.step (lsh_index::resume_at). Throws std::invalid_argument
  // on an empty range or shapes that do not match it.
  modellet(modellet_state state, const modellet_sampling& sampling);

  int32_t begin() const { return s_.begin; }
  int32_t end() const { return s_.end; }
  int64_t hidden() const { return s_.hidden; }
  int64_t step() const { return s_.step; }

  // h is [n, hidden] (the batch's hidden activations); each sample's labels
  // in this range are forced into its active set. Keeps h and the active
  // sets for backward. Step `step` is the optimizer step being computed
  // (0-based), which seeds the top-up.
  modellet_scores forward(const tensor& h, const label_rows& labels, int64_t step);
  // dlogits in the layout of the last forward's ids; dh is [n, hidden] and
  // is overwritten with this range's part. Returns the sum of squares of the
  // parameter gradients. An error (empty string: none) if the sizes do not
  // match the last forward.
  std::string backward(const std::vector<float>& dlogits, tensor& dh, double& sum_of_squares);
  // AdamW step t on the touched rows, gradients times grad_scale, then the
  // index refresh due at t. Clears the step's gradients.
  void update(const adamw_config& cfg, int64_t t, double grad_scale);

  // Values and moments (the PS's periodic copy).
  const modellet_state& state() const { return s_; }
  // Rows a step touches summed over steps: the "updates" a crash can lose.
  int64_t rows_updated() const { return rows_updated_; }

 private:
  void drop_gradients();

  modellet_state s_;
  modellet_sampling sampling_;
  std::unique_ptr<lsh_index> index_;  // null when every neuron is active
  tensor gw_, gb_;                    // gradients, zero outside touched_
  std::vector<int32_t> touched_;      // local rows, ascending
  tensor h_;                          // the last forward's input
  std::vector<std::vector<int32_t>> active_;  // local ids per sample
  std::vector<int64_t> offsets_;
  int64_t rows_updated_ = 0;
};

}  // namespace cleave
