#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/ops.hpp"

namespace cleave {

namespace {

// dst[c] += sum_r src[r, c]. Columns are cut into blocks, one thread per block,
// and each column is summed over the rows in order: the result does not depend
// on the thread count.
template <class T>
void colsum_accumulate(const T* src, int64_t rows, int64_t cols, int64_t ld, T* dst) {
  constexpr int64_t blk = 256;
  const int64_t nblk = (cols + blk - 1) / blk;
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (rows * cols > (1 << 15) && nblk > 1)
  for (int64_t ib = 0; ib < nblk; ++ib) {
    const int64_t c0 = ib * blk;
    const int64_t w = std::min(blk, cols - c0);
    T acc[blk];
    for (int64_t c = 0; c < w; ++c) acc[c] = T(0);
    for (int64_t r = 0; r < rows; ++r) {
      const T* s = src + r * ld + c0;
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) acc[c] += s[c];
    }
    for (int64_t c = 0; c < w; ++c) dst[c0 + c] += acc[c];
  }
}

}  // namespace

template <class T>
void linear_forward(gemm_engine<T>& eng, uint32_t layer, int32_t weight, const basic_tensor<T>& x,
                    const basic_tensor<T>& w, const basic_tensor<T>* b, basic_tensor<T>& y) {
  if (x.cols() != w.rows())
    throw std::invalid_argument("linear_forward: x has " + std::to_string(x.cols()) +
                                " columns but w has " + std::to_string(w.rows()) + " rows");
  if (b && b->size() != w.cols())
    throw std::invalid_argument("linear_forward: bias size does not match w columns");
  const int64_t n = x.rows(), out = w.cols();
  y.resize(n, out);
  eng.gemm({layer, gemm_role::forward, weight}, x.view(), false, w.view(), false, y.view(), T(0));
  if (b) {
    const T* bp = b->data();
    T* yp = y.data();
    const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (n * out > (1 << 15))
    for (int64_t r = 0; r < n; ++r) {
      T* row = yp + r * out;
#pragma omp simd
      for (int64_t c = 0; c < out; ++c) row[c] += bp[c];
    }
  }
}

template <class T>
void linear_backward(gemm_engine<T>& eng, uint32_t layer, int32_t weight, const basic_tensor<T>& x,
                     const basic_tensor<T>& w, const basic_tensor<T>& dy, basic_tensor<T>* dx,
                     basic_tensor<T>& dw, basic_tensor<T>* db) {
  if (x.cols() != w.rows() || dy.rows() != x.rows() || dy.cols() != w.cols())
    throw std::invalid_argument("linear_backward: shape mismatch between x, w and dy");
  // A gradient the engine keeps elsewhere (PS shards) is named by its shape alone.
  const bool kept_elsewhere = dw.empty() && eng.keeps_parameter_state();
  if (!kept_elsewhere) dw.resize(w.rows(), w.cols());  // zero-filled only if it was not shaped yet
  const mut_view<T> dw_view = kept_elsewhere ? mut_view<T>{nullptr, w.rows(), w.cols(), w.cols()} : dw.view();
  std::vector<gemm_job<T>> jobs;
  if (dx) {
    dx->resize(x.rows(), x.cols());
    jobs.push_back({{layer, gemm_role::grad_input, weight}, dy.view(), false, w.view(), true, dx->view(), T(0)});
  }
  jobs.push_back({{layer, gemm_role::grad_weight, weight}, x.view(), true, dy.view(), false, dw_view, T(1)});
  // Before the products, while dY is still in cache from the op that wrote it.
  if (db) {
    if (db->size() != w.cols()) db->resize(1, w.cols());
    colsum_accumulate(dy.data(), dy.rows(), dy.cols(), dy.cols(), db->data());
  }
  eng.gemm_batch(jobs);
}

#define CLEAVE_INST(T)                                                                        \
  template void linear_forward<T>(gemm_engine<T>&, uint32_t, int32_t, const basic_tensor<T>&,          \
                                  const basic_tensor<T>&, const basic_tensor<T>*,             \
                                  basic_tensor<T>&);                                          \
  template void linear_backward<T>(gemm_engine<T>&, uint32_t, int32_t, const basic_tensor<T>&,         \
                                   const basic_tensor<T>&, const basic_tensor<T>&,            \
                                   basic_tensor<T>*, basic_tensor<T>&, basic_tensor<T>*);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
