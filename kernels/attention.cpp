// GCC 12 reports false -Wmaybe-uninitialized positives inside Eigen's AVX-512
// packet code; nothing in this file is affected.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <omp.h>

#include "kernels/ops.hpp"
#include "kernels/reproducible.hpp"

namespace cleave {

namespace {



void check_dims(const char* what, int64_t rows, int64_t cols, int64_t batch, int64_t seq,
                int64_t heads) {
  if (batch <= 0 || seq <= 0 || heads <= 0 || rows != batch * seq || cols % 3 != 0 ||
      (cols / 3) % heads != 0)
    throw std::invalid_argument(std::string(what) + ": qkv is " + std::to_string(rows) + "x" +
                                std::to_string(cols) + ", expected [batch*seq, 3*d] with d " +
                                "divisible by heads (batch=" + std::to_string(batch) +
                                ", seq=" + std::to_string(seq) +
                                ", heads=" + std::to_string(heads) + ")");
}

// The (sample, head) problems are independent. When the engine computes all
// their products here, the problems run in parallel, one per thread, each
// product single-threaded through gemm_local; otherwise the engine gets the
// products in order from this thread.
struct head_product {
  gemm_tag tag;
  int64_t m, n, k;
};

template <class T>
class head_products {
 public:
  head_products(gemm_engine<T>& eng, std::initializer_list<head_product> shapes, int64_t problems)
      : eng_(eng), threads_(compute_threads()) {
    parallel_ = threads_ > 1 && problems >= threads_;
    for (const auto& s : shapes) parallel_ = parallel_ && eng.computes_here(s.tag, s.m, s.n, s.k);
    seconds_.assign(static_cast<size_t>(threads_), 0.0);
  }
  // The engine's accounts get the time as if the threads had shared it evenly.
  ~head_products() {
    if (!parallel_ || products_ == 0) return;
    double total = 0;
    for (double s : seconds_) total += s;
    eng_.add_local_seconds(total / threads_, products_);
  }
  head_products(const head_products&) = delete;
  head_products& operator=(const head_products&) = delete;

  bool parallel() const { return parallel_; }
  int threads() const { return threads_; }

  void operator()(gemm_tag tag, const_view<T> a, bool trans_a, const_view<T> b, bool trans_b,
                  mut_view<T> c) {
    if (!parallel_) {
      eng_.gemm(tag, a, trans_a, b, trans_b, c, T(0));
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    gemm_local<T>(a, trans_a, b, trans_b, c, T(0));
    seconds_[static_cast<size_t>(omp_get_thread_num())] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
#pragma omp atomic
    ++products_;
  }

 private:
  gemm_engine<T>& eng_;
  int threads_;
  bool parallel_ = false;
  std::vector<double> seconds_;  // per thread
  int64_t products_ = 0;
};

// In-place causal softmax of S * scale for a [seq, seq] block (row i keeps
// columns 0..i; the rest become 0).
template <class T>
void causal_softmax(T* s, int64_t seq, int64_t ld, T scale) {
  using arr = Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>>;
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (!omp_in_parallel() && seq * seq > (1 << 15))
  for (int64_t i = 0; i < seq; ++i) {
    T* row = s + i * ld;
    const int64_t live = i + 1;
    const T mx = arr(row, live).maxCoeff();  // exact in any order
    const T inv = T(1) / detail::exp_sum(row, row, live, mx, scale);
#pragma omp simd
    for (int64_t j = 0; j < live; ++j) row[j] *= inv;
    std::fill(row + live, row + seq, T(0));
  }
}

// dP (in place) -> dS = P * (dP - rowsum(dP * P)) * scale, masked entries 0.
template <class T>
void softmax_grad(const T* p, int64_t ldp, T* dp, int64_t seq, T scale) {
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (!omp_in_parallel() && seq * seq > (1 << 15))
  for (int64_t i = 0; i < seq; ++i) {
    const T* pr = p + i * ldp;
    T* gr = dp + i * seq;
    const int64_t live = i + 1;
    const T dot = detail::lane_sum<T>(live, [&](int64_t j) { return pr[j] * gr[j]; });
#pragma omp simd
    for (int64_t j = 0; j < live; ++j) gr[j] = pr[j] * (gr[j] - dot) * scale;
    std::fill(gr + live, gr + seq, T(0));
  }
}

}  // namespace

template <class T>
void attention_forward(gemm_engine<T>& eng, uint32_t layer, const basic_tensor<T>& qkv,
                       int64_t batch, int64_t seq, int64_t heads, basic_tensor<T>& out,
                       basic_tensor<T>& probs) {
  check_dims("attention_forward", qkv.rows(), qkv.cols(), batch, seq, heads);
  const int64_t d = qkv.cols() / 3, dh = d / heads, ld = qkv.cols();
  out.resize(batch * seq, d);
  probs.resize(batch * heads * seq, seq);
  const T scale = T(1) / std::sqrt(T(dh));
  const T* base = qkv.data();

  const int64_t problems = batch * heads;
  head_products<T> product(eng,
                           {{{layer, gemm_role::attn_scores}, seq, seq, dh},
                            {{layer, gemm_role::attn_values}, seq, dh, seq}},
                           problems);
  auto one = [&](int64_t bh) {
    const int64_t b = bh / heads, h = bh % heads;
    const T* rows = base + b * seq * ld;
    const const_view<T> q{rows + h * dh, seq, dh, ld};
    const const_view<T> k{rows + d + h * dh, seq, dh, ld};
    const const_view<T> v{rows + 2 * d + h * dh, seq, dh, ld};
    const mut_view<T> p = probs.rows_view(bh * seq, seq);
    const mut_view<T> o{out.data() + b * seq * d + h * dh, seq, dh, d};
    product({layer, gemm_role::attn_scores}, q, false, k, true, p);
    causal_softmax(p.data, seq, p.ld, scale);
    product({layer, gemm_role::attn_values}, p, false, v, false, o);
  };

  if (product.parallel()) {
#pragma omp parallel for num_threads(product.threads()) schedule(static)
    for (int64_t bh = 0; bh < problems; ++bh) one(bh);
  } else {
    for (int64_t bh = 0; bh < problems; ++bh) one(bh);
  }
}

template <class T>
void attention_backward(gemm_engine<T>& eng, uint32_t layer, const basic_tensor<T>& qkv,
                        const basic_tensor<T>& probs, const basic_tensor<T>& dout,
                        int64_t batch, int64_t seq, int64_t heads, basic_tensor<T>& dqkv) {
  check_dims("attention_backward", qkv.rows(), qkv.cols(), batch, seq, heads);
  const int64_t d = qkv.cols() / 3, dh = d / heads, ld = qkv.cols();
  if (probs.rows() != batch * heads * seq || probs.cols() != seq)
    throw std::invalid_argument("attention_backward: probs has the wrong shape");
  if (dout.rows() != batch * seq || dout.cols() != d)
    throw std::invalid_argument("attention_backward: dout has the wrong shape");
  dqkv.resize(qkv.rows(), qkv.cols());
  const T scale = T(1) / std::sqrt(T(dh));
  const T* base = qkv.data();
  T* gbase = dqkv.data();

  const int64_t problems = batch * heads;
  const gemm_tag tag{layer, gemm_role::attn_grad};
  head_products<T> product(eng, {{tag, seq, dh, seq}, {tag, seq, seq, dh}}, problems);
  auto one = [&](int64_t bh, std::vector<T>& scratch) {
    const int64_t b = bh / heads, h = bh % heads;
    const T* rows = base + b * seq * ld;
    T* grows = gbase + b * seq * ld;
    const const_view<T> q{rows + h * dh, seq, dh, ld};
    const const_view<T> k{rows + d + h * dh, seq, dh, ld};
    const const_view<T> v{rows + 2 * d + h * dh, seq, dh, ld};
    const const_view<T> p = probs.rows_view(bh * seq, seq);
    const const_view<T> dov{dout.data() + b * seq * d + h * dh, seq, dh, d};
    const mut_view<T> dq{grows + h * dh, seq, dh, ld};
    const mut_view<T> dk{grows + d + h * dh, seq, dh, ld};
    const mut_view<T> dv{grows + 2 * d + h * dh, seq, dh, ld};
    scratch.resize(static_cast<size_t>(seq * seq));
    const mut_view<T> ds{scratch.data(), seq, seq, seq};
    product(tag, p, true, dov, false, dv);    // dV = P^T dO
    product(tag, dov, false, v, true, ds);    // dP = dO V^T
    softmax_grad(p.data, p.ld, ds.data, seq, scale);  // dS
    product(tag, ds, false, k, false, dq);    // dQ = dS K
    product(tag, ds, true, q, false, dk);     // dK = dS^T Q
  };

  if (product.parallel()) {
#pragma omp parallel num_threads(product.threads())
    {
      thread_local std::vector<T> scratch;
#pragma omp for schedule(static)
      for (int64_t bh = 0; bh < problems; ++bh) one(bh, scratch);
    }
  } else {
    thread_local std::vector<T> scratch;
    for (int64_t bh = 0; bh < problems; ++bh) one(bh, scratch);
  }
}

#define CLEAVE_INST(T)                                                                        \
  template void attention_forward<T>(gemm_engine<T>&, uint32_t, const basic_tensor<T>&,       \
                                     int64_t, int64_t, int64_t, basic_tensor<T>&,             \
                                     basic_tensor<T>&);                                       \
  template void attention_backward<T>(gemm_engine<T>&, uint32_t, const basic_tensor<T>&,      \
                                      const basic_tensor<T>&, const basic_tensor<T>&, int64_t, \
                                      int64_t, int64_t, basic_tensor<T>&);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
