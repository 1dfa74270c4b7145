// GCC 12 reports false -Wmaybe-uninitialized positives inside Eigen's AVX-512
// packet code; nothing in this file is affected.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/gemm.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

#include <omp.h>

namespace cleave {

namespace {

std::atomic<int> g_threads{0};  // 0: not set yet, use the OpenMP default

// Pinned before main() in every process that links the kernels, so results
// depend only on the instruction sets and the thread count, and tiles
// computed on different CPUs agree.
const bool blocking_pinned = [] {
  Eigen::setCpuCacheSizes(gemm_blocking_caches.l1, gemm_blocking_caches.l2, gemm_blocking_caches.l3);
  return true;
}();

[[noreturn]] void shape_error(int64_t ar, int64_t ac, bool ta, int64_t br, int64_t bc, bool tb,
                              int64_t cr, int64_t cc) {
  throw std::invalid_argument("gemm: shape mismatch: op(A)=" + std::to_string(ta ? ac : ar) +
                              "x" + std::to_string(ta ? ar : ac) + ", op(B)=" +
                              std::to_string(tb ? bc : br) + "x" + std::to_string(tb ? br : bc) +
                              ", C=" + std::to_string(cr) + "x" + std::to_string(cc));
}

template <class T, class A, class B>
void run(const A& a, const B& b, mut_view<T> c, T beta) {
  auto cm = c.map();
  if (beta == T(0)) {
    cm.noalias() = a * b;  // overwrites: NaN/garbage in C never leaks through
  } else {
    if (beta != T(1)) cm *= beta;
    cm.noalias() += a * b;
  }
}

// Eigen evaluates products this small coefficient-wise with a vectorisation
// that depends on where C sits in memory; this loop gives the same bits
// wherever the operands are.
template <class T>
void tiny_gemm(const_view<T> a, bool ta, const_view<T> b, bool tb, mut_view<T> c, int64_t k,
               T beta) {
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.cols; ++j) {
      T s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += (ta ? a.data[p * a.ld + i] : a.data[i * a.ld + p]) *
             (tb ? b.data[j * b.ld + p] : b.data[p * b.ld + j]);
      T& out = c.data[i * c.ld + j];
      out = beta == T(0) ? s : s + beta * out;
    }
}

}  // namespace

template <class T>
void gemm_local(const_view<T> a, bool trans_a, const_view<T> b, bool trans_b, mut_view<T> c,
                T beta) {
  const int64_t m = trans_a ? a.cols : a.rows;
  const int64_t k = trans_a ? a.rows : a.cols;
  const int64_t kb = trans_b ? b.cols : b.rows;
  const int64_t n = trans_b ? b.rows : b.cols;
  if (k != kb || c.rows != m || c.cols != n)
    shape_error(a.rows, a.cols, trans_a, b.rows, b.cols, trans_b, c.rows, c.cols);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == T(0))
      c.map().setZero();
    else if (beta != T(1))
      c.map() *= beta;
    return;
  }
  if (m + n + k < 24) {  // Eigen's coefficient-based threshold is 20
    tiny_gemm<T>(a, trans_a, b, trans_b, c, k, beta);
    return;
  }
  const auto am = a.map();
  const auto bm = b.map();
  if (!trans_a && !trans_b)
    run<T>(am, bm, c, beta);
  else if (!trans_a && trans_b)
    run<T>(am, bm.transpose(), c, beta);
  else if (trans_a && !trans_b)
    run<T>(am.transpose(), bm, c, beta);
  else
    run<T>(am.transpose(), bm.transpose(), c, beta);
}

template <class T>
void local_gemm_engine<T>::gemm(gemm_tag, const_view<T> a, bool trans_a, const_view<T> b,
                                bool trans_b, mut_view<T> c, T beta) {
  gemm_local<T>(a, trans_a, b, trans_b, c, beta);
}

template <class T>
gemm_engine<T>& default_gemm_engine() {
  static local_gemm_engine<T> engine;
  return engine;
}

void set_compute_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  g_threads.store(n, std::memory_order_relaxed);
  Eigen::setNbThreads(n);  // process-wide in Eigen
  omp_set_num_threads(n);  // calling thread's default; kernels also pass num_threads explicitly
}

void set_gemm_threads(int n) { Eigen::setNbThreads(n > 0 ? n : 1); }

std::string gemm_instruction_sets() {
  // Eigen's own SimdInstructionSetsInUse() names AVX2 and FMA builds "AVX",
  // yet their products differ from AVX's; the compiler's macros tell them apart.
  std::string names;
  const auto add = [&names](const char* name) { names += (names.empty() ? "" : " ") + std::string(name); };
#ifdef __AVX__
  add("avx");
#endif
#ifdef __AVX2__
  add("avx2");
#endif
#ifdef __AVX512BW__
  add("avx512bw");
#endif
#ifdef __AVX512F__
  add("avx512f");
#endif
#ifdef __AVX512VL__
  add("avx512vl");
#endif
#ifdef __FMA__
  add("fma");
#endif
  return names;
}

std::string gemm_cpu_model() {
#ifdef CLEAVE_CPU_MODEL
  return CLEAVE_CPU_MODEL;
#else
  return "unknown";
#endif
}

int compute_threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}

template class local_gemm_engine<float>;
template class local_gemm_engine<double>;
template void gemm_local<float>(const_view<float>, bool, const_view<float>, bool,
                                mut_view<float>, float);
template void gemm_local<double>(const_view<double>, bool, const_view<double>, bool,
                                 mut_view<double>, double);
template gemm_engine<float>& default_gemm_engine<float>();
template gemm_engine<double>& default_gemm_engine<double>();

}  // namespace cleave
