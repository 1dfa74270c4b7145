// GCC 12 reports false -Wmaybe-uninitialized positives inside Eigen's AVX-512
// packet code; nothing in this file is affected.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/ops.hpp"
#include "kernels/reproducible.hpp"

namespace cleave {

namespace {

constexpr int64_t kChunk = 2048;  // elements per parallel work item


// Runs f(offset, length) over [0, n) in fixed chunks. Element-wise only, so
// the result is independent of the thread count.
template <class F>
void for_chunks(int64_t n, F&& f) {
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nchunks > 4)
  for (int64_t i = 0; i < nchunks; ++i) {
    const int64_t off = i * kChunk;
    f(off, std::min(kChunk, n - off));
  }
}

template <class T>
void check_same(const basic_tensor<T>& a, const basic_tensor<T>& b, const char* what) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw std::invalid_argument(std::string(what) + ": shape mismatch");
}

// GELU (tanh form): 0.5 x (1 + tanh(k0 (x + k1 x^3))).
template <class T>
constexpr T kGeluK0 = T(0.7978845608028654);  // sqrt(2/pi)
template <class T>
constexpr T kGeluK1 = T(0.044715);

}  // namespace

template <class T>
void relu_forward(const basic_tensor<T>& x, basic_tensor<T>& y) {
  y.resize(x.rows(), x.cols());
  const T* xp = x.data();
  T* yp = y.data();
  for_chunks(x.size(), [&](int64_t off, int64_t len) {
#pragma omp simd
    for (int64_t i = off; i < off + len; ++i) yp[i] = xp[i] > T(0) ? xp[i] : T(0);
  });
}

template <class T>
void relu_backward(const basic_tensor<T>& x, const basic_tensor<T>& dy, basic_tensor<T>& dx) {
  check_same(x, dy, "relu_backward");
  dx.resize(x.rows(), x.cols());
  const T* xp = x.data();
  const T* gp = dy.data();
  T* dp = dx.data();
  for_chunks(x.size(), [&](int64_t off, int64_t len) {
#pragma omp simd
    for (int64_t i = off; i < off + len; ++i) dp[i] = xp[i] > T(0) ? gp[i] : T(0);
  });
}

template <class T>
void gelu_forward(const basic_tensor<T>& x, basic_tensor<T>& y) {
  y.resize(x.rows(), x.cols());
  const T* xp = x.data();
  T* yp = y.data();
  for_chunks(x.size(), [&](int64_t off, int64_t len) {
    alignas(64) T xb[detail::aligned_block];
    alignas(64) T yb[detail::aligned_block];
    for (int64_t o = off; o < off + len; o += detail::aligned_block) {
      const int64_t l = std::min(detail::aligned_block, off + len - o), lp = detail::padded(l);
      std::copy(xp + o, xp + o + l, xb);
      std::fill(xb + l, xb + lp, T(0));
      detail::aligned_map<T> xv(xb, lp), yv(yb, lp);
      yv = T(0.5) * xv * (T(1) + (kGeluK0<T> * (xv + kGeluK1<T> * xv.cube())).tanh());
      std::copy(yb, yb + l, yp + o);
    }
  });
}

template <class T>
void gelu_backward(const basic_tensor<T>& x, const basic_tensor<T>& dy, basic_tensor<T>& dx) {
  check_same(x, dy, "gelu_backward");
  dx.resize(x.rows(), x.cols());
  const T* xp = x.data();
  const T* gp = dy.data();
  T* dp = dx.data();
  for_chunks(x.size(), [&](int64_t off, int64_t len) {
    alignas(64) T xb[detail::aligned_block];
    alignas(64) T gb[detail::aligned_block];
    alignas(64) T tb[detail::aligned_block];
    for (int64_t o = off; o < off + len; o += detail::aligned_block) {
      const int64_t l = std::min(detail::aligned_block, off + len - o), lp = detail::padded(l);
      std::copy(xp + o, xp + o + l, xb);
      std::fill(xb + l, xb + lp, T(0));
      std::copy(gp + o, gp + o + l, gb);
      std::fill(gb + l, gb + lp, T(0));
      detail::aligned_map<T> xv(xb, lp), gv(gb, lp), t(tb, lp);
      t = (kGeluK0<T> * (xv + kGeluK1<T> * xv.cube())).tanh();
      // d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k0 (1 + 3 k1 x^2)
      gv = gv * (T(0.5) * (T(1) + t) + T(0.5) * xv * (T(1) - t.square()) * kGeluK0<T> *
                                           (T(1) + T(3) * kGeluK1<T> * xv.square()));
      std::copy(gb, gb + l, dp + o);
    }
  });
}

template <class T>
void add_inplace(basic_tensor<T>& y, const basic_tensor<T>& x) {
  check_same(y, x, "add_inplace");
  const T* xp = x.data();
  T* yp = y.data();
  for_chunks(y.size(), [&](int64_t off, int64_t len) {
#pragma omp simd
    for (int64_t i = off; i < off + len; ++i) yp[i] += xp[i];
  });
}

#define CLEAVE_INST(T)                                                                     \
  template void relu_forward<T>(const basic_tensor<T>&, basic_tensor<T>&);                 \
  template void relu_backward<T>(const basic_tensor<T>&, const basic_tensor<T>&,           \
                                 basic_tensor<T>&);                                        \
  template void gelu_forward<T>(const basic_tensor<T>&, basic_tensor<T>&);                 \
  template void gelu_backward<T>(const basic_tensor<T>&, const basic_tensor<T>&,           \
                                 basic_tensor<T>&);                                        \
  template void add_inplace<T>(basic_tensor<T>&, const basic_tensor<T>&);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
