#pragma once
// Dense ops with forward and backward. Templated on the scalar so that every
// op can be checked in double precision against central finite differences
// (tests/kernels_gradcheck_test.cpp); float and double are instantiated.
//
// Conventions: every tensor is row-major [rows, cols]; tokens or samples are
// rows. Backward ops *overwrite* input gradients and *accumulate* into
// parameter gradients (so gradients can be summed over micro-batches and
// zeroed once per step by the optimizer's caller).

#include <cstdint>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/tensor.hpp"

namespace cleave {

// -- linear: y = x w + b; x [n, in], w [in, out], b [1, out] or null ---------
// `weight` is w's id in the parameter store (gemm_tag::weight), or -1.
template <class T>
void linear_forward(gemm_engine<T>& eng, uint32_t layer, int32_t weight, const basic_tensor<T>& x,
                    const basic_tensor<T>& w, const basic_tensor<T>* b, basic_tensor<T>& y);
// dx = dy w^T (skipped if dx is null), dw += x^T dy, db += colsum(dy).
template <class T>
void linear_backward(gemm_engine<T>& eng, uint32_t layer, int32_t weight, const basic_tensor<T>& x,
                     const basic_tensor<T>& w, const basic_tensor<T>& dy, basic_tensor<T>* dx,
                     basic_tensor<T>& dw, basic_tensor<T>* db);

// -- element-wise activations -------------------------------------------------
template <class T>
void relu_forward(const basic_tensor<T>& x, basic_tensor<T>& y);
template <class T>
void relu_backward(const basic_tensor<T>& x, const basic_tensor<T>& dy, basic_tensor<T>& dx);
// GELU, tanh approximation (as GPT-2 and OPT use).
template <class T>
void gelu_forward(const basic_tensor<T>& x, basic_tensor<T>& y);
template <class T>
void gelu_backward(const basic_tensor<T>& x, const basic_tensor<T>& dy, basic_tensor<T>& dx);

// -- LayerNorm over each row; gamma, beta [1, d] ------------------------------
template <class T>
struct layernorm_cache {
  basic_tensor<T> mean;  // [n, 1]
  basic_tensor<T> rstd;  // [n, 1]
};
template <class T>
void layernorm_forward(const basic_tensor<T>& x, const basic_tensor<T>& gamma,
                       const basic_tensor<T>& beta, T eps, basic_tensor<T>& y,
                       layernorm_cache<T>& cache);
template <class T>
void layernorm_backward(const basic_tensor<T>& x, const basic_tensor<T>& gamma,
                        const layernorm_cache<T>& cache, const basic_tensor<T>& dy,
                        basic_tensor<T>& dx, basic_tensor<T>& dgamma, basic_tensor<T>& dbeta);

// -- embedding: y[i] = table[ids[i]]; table [vocab, d] --------------------------
// Precondition: 0 <= ids[i] < table.rows() (data readers validate their ids).
template <class T>
void embedding_forward(const std::vector<int32_t>& ids, const basic_tensor<T>& table,
                       basic_tensor<T>& y);
template <class T>
void embedding_backward(const std::vector<int32_t>& ids, const basic_tensor<T>& dy,
                        basic_tensor<T>& dtable);

// -- causal multi-head self-attention -----------------------------------------
// qkv [batch*seq, 3d]: columns [0,d) are Q, [d,2d) K, [2d,3d) V; head h uses
// columns [h*dh, (h+1)*dh) of each, dh = d / heads. out [batch*seq, d].
// probs caches the softmax [batch*heads*seq, seq] for the backward pass.
// The four products per (sample, head) go through `eng` with layer tag `layer`.
template <class T>
void attention_forward(gemm_engine<T>& eng, uint32_t layer, const basic_tensor<T>& qkv,
                       int64_t batch, int64_t seq, int64_t heads, basic_tensor<T>& out,
                       basic_tensor<T>& probs);
template <class T>
void attention_backward(gemm_engine<T>& eng, uint32_t layer, const basic_tensor<T>& qkv,
                        const basic_tensor<T>& probs, const basic_tensor<T>& dout,
                        int64_t batch, int64_t seq, int64_t heads, basic_tensor<T>& dqkv);

// -- softmax cross-entropy, mean over rows --------------------------------------
// Returns the mean loss; probs receives the softmax of each row.
template <class T>
double softmax_xent_forward(const basic_tensor<T>& logits, const std::vector<int32_t>& labels,
                            basic_tensor<T>& probs);
// dlogits = (probs - onehot(labels)) / n
template <class T>
void softmax_xent_backward(const basic_tensor<T>& probs, const std::vector<int32_t>& labels,
                           basic_tensor<T>& dlogits);

// -- residual helper: y += x ------------------------------------------------------
template <class T>
void add_inplace(basic_tensor<T>& y, const basic_tensor<T>& x);

// -- AdamW with global-norm gradient clipping -----------------------------------
struct adamw_config {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  double clip_norm = 1.0;  // <= 0 disables clipping
};

// Sum of squares of a gradient; a sharded PS adds the shards' sums before
// taking the root, so this is kept separate from the scale.
template <class T>
double sum_of_squares(const basic_tensor<T>& g);

// The same over the listed rows of g only (a sparse-mode gradient is zero
// elsewhere): each row summed in double, the rows in the order given, in
// fixed blocks of at least 1024 rows that threads sum at once and that are
// combined in order (so the sum does not depend on the thread count).
template <class T>
double sum_of_squares_rows(const basic_tensor<T>& g, const std::vector<int32_t>& rows);

// The factor every gradient is multiplied by so the global norm is at most
// clip_norm (1 when clipping is off or not needed).
double clip_scale(double global_norm, double clip_norm);

// One decoupled-weight-decay Adam update of w at step t (t >= 1).
template <class T>
void adamw_update(basic_tensor<T>& w, const basic_tensor<T>& g, basic_tensor<T>& m,
                  basic_tensor<T>& v, int64_t t, const adamw_config& cfg, double grad_scale,
                  bool decay);

// The same update on the listed rows only, each row exactly as adamw_update
// would change it; rows not listed keep their weights and moments (a lazy
// Adam, for sparse mode: a step costs what it touched). Rows must be
// distinct and in range (std::out_of_range otherwise).
template <class T>
void adamw_update_rows(basic_tensor<T>& w, const basic_tensor<T>& g, basic_tensor<T>& m,
                       basic_tensor<T>& v, const std::vector<int32_t>& rows, int64_t t,
                       const adamw_config& cfg, double grad_scale, bool decay);

// adamw_update_rows, then each listed row of g zeroed while it is in cache:
// the next step's gradient starts from zero without a pass of its own.
template <class T>
void adamw_update_rows_zeroing(basic_tensor<T>& w, basic_tensor<T>& g, basic_tensor<T>& m,
                               basic_tensor<T>& v, const std::vector<int32_t>& rows, int64_t t,
                               const adamw_config& cfg, double grad_scale, bool decay);

}  // namespace cleave
