#pragma once
// The math of sparse mode (SLIDE), forward and backward, for the extreme
// classifier: a sparse input layer, and a wide softmax output layer that
// works only on each sample's active neurons. Templated on the scalar so the
// tests can check every op in double against finite differences and against
// the dense ops of kernels/ops.hpp. Same conventions as ops.hpp: backward
// ops overwrite input gradients and accumulate into parameter gradients.
//
// The output layer's weights are neuron-major, [neurons, in], so that an
// active neuron's weights are one contiguous row (and a model-let is a block
// of rows). Its softmax over a sample's active set can be computed in parts,
// each over its own neurons: softmax_stats of the parts merge into the
// stats of the whole, which is how model-lets on different devices agree on
// one exact softmax over the union of their active sets.

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/ops.hpp"
#include "kernels/tensor.hpp"

namespace cleave {

// One sample's sparse features: ids ascending and distinct, with values.
struct sparse_row {
  const int32_t* ids = nullptr;
  const float* values = nullptr;
  int64_t nnz = 0;
};

// -- sparse input layer: y[r] = sum_f x[r,f] w[f] + b; w [features, out] -------
// Precondition: every id < w.rows() (the data reader checks ids).
template <class T>
void sparse_linear_forward(const std::vector<sparse_row>& x, const basic_tensor<T>& w,
                           const basic_tensor<T>& b, basic_tensor<T>& y);
// dw[f] += x[r,f] dy[r] for every nonzero; db += colsum(dy).
template <class T>
void sparse_linear_backward(const std::vector<sparse_row>& x, const basic_tensor<T>& dy,
                            basic_tensor<T>& dw, basic_tensor<T>& db);

// -- the output layer over a sample's active neurons ---------------------------
// logits[j] = w[active[j]] . h + b[active[j]]; h has w.cols() values.
template <class T>
void active_logits(const T* h, const basic_tensor<T>& w, const basic_tensor<T>& b,
                   const std::vector<int32_t>& active, T* logits);

// A softmax's normaliser in a form that merges: sum_j exp(l_j - max).
struct softmax_stats {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
};
template <class T>
softmax_stats partial_softmax(const T* logits, int64_t n);
softmax_stats merge(const softmax_stats& a, const softmax_stats& b);

// One sample's cross-entropy against its labels (each a target of weight
// 1/|labels|, all in `active`) under a softmax whose normaliser is `whole`
// (the stats of every part). Writes dlogits[j] = scale (p_j - t_j) for this
// part's logits and returns this part's share of the loss, -sum_j t_j log p_j
// over its labels. Labels missing from `active` throw std::invalid_argument.
template <class T>
double sampled_softmax_xent(const T* logits, const std::vector<int32_t>& active,
                            const std::vector<int32_t>& labels, const softmax_stats& whole, T scale,
                            T* dlogits);

// Backward through the active neurons: dh += sum_j dlogits[j] w[active[j]]
// (dh is accumulated, as several parts add into it), dw[active[j]] +=
// dlogits[j] h, db[active[j]] += dlogits[j].
template <class T>
void active_backward(const T* h, const basic_tensor<T>& w, const std::vector<int32_t>& active,
                     const T* dlogits, T* dh, basic_tensor<T>& dw, basic_tensor<T>& db);
// Its two halves, for callers that run them on threads: the input's
// gradient (dh += ..., one sample's, independent of the others), and the
// parameters' on the active neurons in [first_row, end_row) only (active is
// ascending), so that threads owning disjoint row ranges can add a batch's
// samples in sample order, the same sums for any thread count.
template <class T>
void active_grad_input(const basic_tensor<T>& w, const std::vector<int32_t>& active,
                       const T* dlogits, T* dh);
template <class T>
void active_grad_weight(const T* h, const std::vector<int32_t>& active, const T* dlogits,
                        int32_t first_row, int32_t end_row, basic_tensor<T>& dw,
                        basic_tensor<T>& db);

// The optimizer's side, AdamW on the rows a step touched, is
// adamw_update_rows in kernels/ops.hpp.

}  // namespace cleave
