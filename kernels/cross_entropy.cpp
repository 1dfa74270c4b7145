// GCC 12 reports false -Wmaybe-uninitialized positives inside Eigen's AVX-512
// packet code; nothing in this file is affected.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/ops.hpp"
#include "kernels/reproducible.hpp"

namespace cleave {

namespace {


void check_labels(const std::vector<int32_t>& labels, int64_t rows, int64_t cols,
                  const char* what) {
  if (static_cast<int64_t>(labels.size()) != rows)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(labels.size()) +
                                " labels for " + std::to_string(rows) + " rows");
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= cols)
      throw std::out_of_range(std::string(what) + ": label " + std::to_string(labels[i]) +
                              " at row " + std::to_string(i) + " is outside [0, " +
                              std::to_string(cols) + ")");
}

}  // namespace

template <class T>
double softmax_xent_forward(const basic_tensor<T>& logits, const std::vector<int32_t>& labels,
                            basic_tensor<T>& probs) {
  const int64_t n = logits.rows(), v = logits.cols();
  check_labels(labels, n, v, "softmax_xent_forward");
  probs.resize(n, v);
  if (n == 0) return 0.0;
  using carr = Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>>;
  // Per-chunk partial sums in double, combined in order: the loss does not
  // depend on the thread count.
  const double total = detail::ordered_chunk_sum(
    n, 1, compute_threads(), n * v > (1 << 15), [&](int64_t begin, int64_t end) {
      double acc = 0;
      for (int64_t r = begin; r < end; ++r) {
        const T* x = logits.data() + r * v;
        T* p = probs.data() + r * v;
        const T mx = carr(x, v).maxCoeff();  // exact in any order
        const T sum = detail::exp_sum(x, p, v, mx, T(1));
        const T inv = T(1) / sum;
#pragma omp simd
        for (int64_t c = 0; c < v; ++c) p[c] *= inv;
        // loss = log(sum exp(x - mx)) - (x[label] - mx)
        acc += std::log(static_cast<double>(sum)) -
               (static_cast<double>(x[labels[r]]) - static_cast<double>(mx));
      }
      return acc;
    });
  return total / static_cast<double>(n);
}

template <class T>
void softmax_xent_backward(const basic_tensor<T>& probs, const std::vector<int32_t>& labels,
                           basic_tensor<T>& dlogits) {
  const int64_t n = probs.rows(), v = probs.cols();
  check_labels(labels, n, v, "softmax_xent_backward");
  dlogits.resize(n, v);
  if (n == 0) return;
  const T inv_n = T(1) / T(n);
  const T* pp = probs.data();
  T* gp = dlogits.data();
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (n * v > (1 << 15))
  for (int64_t r = 0; r < n; ++r) {
    const T* pr = pp + r * v;
    T* gr = gp + r * v;
#pragma omp simd
    for (int64_t c = 0; c < v; ++c) gr[c] = pr[c] * inv_n;
    gr[labels[r]] -= inv_n;
  }
}

#define CLEAVE_INST(T)                                                                         \
  template double softmax_xent_forward<T>(const basic_tensor<T>&, const std::vector<int32_t>&, \
                                          basic_tensor<T>&);                                   \
  template void softmax_xent_backward<T>(const basic_tensor<T>&, const std::vector<int32_t>&,  \
                                         basic_tensor<T>&);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
