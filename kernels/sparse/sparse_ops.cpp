#include "kernels/sparse/sparse_ops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/reproducible.hpp"

namespace cleave {

template <class T>
void sparse_linear_forward(const std::vector<sparse_row>& x, const basic_tensor<T>& w,
                           const basic_tensor<T>& b, basic_tensor<T>& y) {
  const int64_t out = w.cols();
  if (b.size() != out) throw std::invalid_argument("sparse_linear_forward: bias size does not match w");
  y.resize(static_cast<int64_t>(x.size()), out);
#pragma omp parallel for num_threads(compute_threads()) schedule(static) if (x.size() > 16)
  for (int64_t r = 0; r < static_cast<int64_t>(x.size()); ++r) {
    T* yr = y.data() + r * out;
    std::copy(b.data(), b.data() + out, yr);
    const sparse_row& row = x[static_cast<size_t>(r)];
    for (int64_t e = 0; e < row.nnz; ++e) {
      const T v = static_cast<T>(row.values[e]);
      const T* wf = w.data() + static_cast<int64_t>(row.ids[e]) * out;
      for (int64_t j = 0; j < out; ++j) yr[j] += v * wf[j];
    }
  }
}

template <class T>
void sparse_linear_backward(const std::vector<sparse_row>& x, const basic_tensor<T>& dy,
                            basic_tensor<T>& dw, basic_tensor<T>& db) {
  const int64_t out = dy.cols();
  if (dw.cols() != out || db.size() != out)
    throw std::invalid_argument("sparse_linear_backward: gradient shapes do not match dy");
  // Samples share features, so the rows of dw are written in sample order on
  // one thread: the sums do not depend on the thread count.
  for (size_t r = 0; r < x.size(); ++r) {
    const T* dyr = dy.data() + static_cast<int64_t>(r) * out;
    for (int64_t j = 0; j < out; ++j) db[j] += dyr[j];
    const sparse_row& row = x[r];
    for (int64_t e = 0; e < row.nnz; ++e) {
      const T v = static_cast<T>(row.values[e]);
      T* gf = dw.data() + static_cast<int64_t>(row.ids[e]) * out;
      for (int64_t j = 0; j < out; ++j) gf[j] += v * dyr[j];
    }
  }
}

template <class T>
void active_logits(const T* h, const basic_tensor<T>& w, const basic_tensor<T>& b,
                   const std::vector<int32_t>& active, T* logits) {
  const int64_t in = w.cols();
  for (size_t j = 0; j < active.size(); ++j) {
    const T* wj = w.data() + static_cast<int64_t>(active[j]) * in;
    // In lanes, so that the dot product vectorises (a plain sum in order
    // cannot be reordered by the compiler).
    logits[j] = b[active[j]] + detail::lane_sum<T>(in, [&](int64_t i) { return wj[i] * h[i]; });
  }
}

template <class T>
softmax_stats partial_softmax(const T* logits, int64_t n) {
  softmax_stats s;
  for (int64_t j = 0; j < n; ++j) s.max = std::max(s.max, static_cast<double>(logits[j]));
  for (int64_t j = 0; j < n; ++j) s.sum += std::exp(static_cast<double>(logits[j]) - s.max);
  return s;
}

softmax_stats merge(const softmax_stats& a, const softmax_stats& b) {
  if (a.sum == 0) return b;
  if (b.sum == 0) return a;
  softmax_stats out;
  out.max = std::max(a.max, b.max);
  out.sum = a.sum * std::exp(a.max - out.max) + b.sum * std::exp(b.max - out.max);
  return out;
}

template <class T>
double sampled_softmax_xent(const T* logits, const std::vector<int32_t>& active,
                            const std::vector<int32_t>& labels, const softmax_stats& whole, T scale,
                            T* dlogits) {
  const double log_z = whole.max + std::log(whole.sum);
  for (size_t j = 0; j < active.size(); ++j)
    dlogits[j] = static_cast<T>(scale * std::exp(static_cast<double>(logits[j]) - log_z));
  double loss = 0;
  if (labels.empty()) return loss;
  const double target = 1.0 / static_cast<double>(labels.size());
  for (int32_t label : labels) {
    // active is ascending (lsh active_set's promise).
    auto it = std::lower_bound(active.begin(), active.end(), label);
    if (it == active.end() || *it != label)
      throw std::invalid_argument("sampled_softmax_xent: label " + std::to_string(label)
                                  + " is not in the active set");
    const auto j = static_cast<size_t>(it - active.begin());
    loss -= target * (static_cast<double>(logits[j]) - log_z);
    dlogits[j] -= static_cast<T>(scale * target);
  }
  return loss;
}

template <class T>
void active_grad_input(const basic_tensor<T>& w, const std::vector<int32_t>& active,
                       const T* dlogits, T* dh) {
  const int64_t in = w.cols();
  for (size_t j = 0; j < active.size(); ++j) {
    const T d = dlogits[j];
    const T* wj = w.data() + static_cast<int64_t>(active[j]) * in;
    for (int64_t i = 0; i < in; ++i) dh[i] += d * wj[i];
  }
}

template <class T>
void active_grad_weight(const T* h, const std::vector<int32_t>& active, const T* dlogits,
                        int32_t first_row, int32_t end_row, basic_tensor<T>& dw,
                        basic_tensor<T>& db) {
  const int64_t in = dw.cols();
  auto j = static_cast<size_t>(std::lower_bound(active.begin(), active.end(), first_row) - active.begin());
  for (; j < active.size() && active[j] < end_row; ++j) {
    const T d = dlogits[j];
    T* gj = dw.data() + static_cast<int64_t>(active[j]) * in;
    for (int64_t i = 0; i < in; ++i) gj[i] += d * h[i];
    db[active[j]] += d;
  }
}

template <class T>
void active_backward(const T* h, const basic_tensor<T>& w, const std::vector<int32_t>& active,
                     const T* dlogits, T* dh, basic_tensor<T>& dw, basic_tensor<T>& db) {
  active_grad_input(w, active, dlogits, dh);
  active_grad_weight(h, active, dlogits, 0, static_cast<int32_t>(dw.rows()), dw, db);
}

#define CLEAVE_INST(T)                                                                          \
  template void sparse_linear_forward<T>(const std::vector<sparse_row>&, const basic_tensor<T>&, \
                                         const basic_tensor<T>&, basic_tensor<T>&);             \
  template void sparse_linear_backward<T>(const std::vector<sparse_row>&, const basic_tensor<T>&, \
                                          basic_tensor<T>&, basic_tensor<T>&);                  \
  template void active_logits<T>(const T*, const basic_tensor<T>&, const basic_tensor<T>&,      \
                                 const std::vector<int32_t>&, T*);                              \
  template softmax_stats partial_softmax<T>(const T*, int64_t);                                 \
  template double sampled_softmax_xent<T>(const T*, const std::vector<int32_t>&,                \
                                          const std::vector<int32_t>&, const softmax_stats&, T, T*); \
  template void active_backward<T>(const T*, const basic_tensor<T>&, const std::vector<int32_t>&, \
                                   const T*, T*, basic_tensor<T>&, basic_tensor<T>&);       \
  template void active_grad_input<T>(const basic_tensor<T>&, const std::vector<int32_t>&,    \
                                     const T*, T*);                                         \
  template void active_grad_weight<T>(const T*, const std::vector<int32_t>&, const T*, int32_t, \
                                      int32_t, basic_tensor<T>&, basic_tensor<T>&);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
