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

template <class T>
double sum_of_squares(const basic_tensor<T>& g) {
  const T* p = g.data();
  return detail::ordered_chunk_sum(g.size(), 4096, compute_threads(), true, [&](int64_t begin, int64_t end) {
    return detail::lane_sum<double>(end - begin, [&](int64_t i) {
      const double x = static_cast<double>(p[begin + i]);
      return x * x;
    });
  });
}

template <class T>
double sum_of_squares_rows(const basic_tensor<T>& g, const std::vector<int32_t>& rows) {
  // Up to 1024 rows are one chunk, summed on this thread.
  const int64_t cols = g.cols();
  const auto n = static_cast<int64_t>(rows.size());
  return detail::ordered_chunk_sum(n, 1024, compute_threads(), true, [&](int64_t begin, int64_t end) {
    double sum = 0;
    for (int64_t k = begin; k < end; ++k) {
      const T* q = g.data() + static_cast<int64_t>(rows[static_cast<size_t>(k)]) * cols;
      sum += detail::lane_sum<double>(cols, [&](int64_t i) {
        const double x = static_cast<double>(q[i]);
        return x * x;
      });
    }
    return sum;
  });
}

double clip_scale(double global_norm, double clip_norm) {
  return (clip_norm > 0 && global_norm > clip_norm) ? clip_norm / (global_norm + 1e-6) : 1.0;
}

// One block of the update (defined below the loops that call it).
template <class T>
void adamw_block(T* w, T* m, T* v, const T* g, int64_t l, T b1, T a1, T b2, T a2, T inv_bc1,
                 T inv_bc2, T lr, T eps, T s, T wd);

// The update runs in blocks of kBlk: in parallel over the blocks for a whole
// tensor (adamw_loop), one thread per row for the row updates, which are
// already spread over threads (a parallel region per row, even of one
// thread, costs a team's allocation each: most of a sparse step's update).
constexpr int64_t kBlk = 512;

template <class T>
void adamw_loop(T* wp, T* mp, T* vp, const T* gp, int64_t n, T b1, T a1, T b2, T a2,
                T inv_bc1, T inv_bc2, T lr, T eps, T s, T wd) {
  const int64_t nblk = (n + kBlk - 1) / kBlk;
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (n > (1 << 15))
  for (int64_t ib = 0; ib < nblk; ++ib) {
    const int64_t o = ib * kBlk;
    adamw_block(wp + o, mp + o, vp + o, gp + o, std::min(kBlk, n - o), b1, a1, b2, a2, inv_bc1,
                inv_bc2, lr, eps, s, wd);
  }
}

// The arithmetic in plain loops that vectorise, the square root through
// Eigen on an aligned buffer padded to whole packets (std::sqrt keeps a
// scalar errno path under the default -fmath-errno, which stops the loop
// vectorising; Eigen's packet sqrt is exact, like the scalar). l <= kBlk.
template <class T>
void adamw_block(T* w, T* m, T* v, const T* g, int64_t l, T b1, T a1, T b2, T a2, T inv_bc1,
                 T inv_bc2, T lr, T eps, T s, T wd) {
  const int64_t lp = (l + 15) / 16 * 16;
  alignas(64) T den[kBlk];
#pragma omp simd
  for (int64_t i = 0; i < l; ++i) {
    const T gs = g[i] * s;
    const T mi = b1 * m[i] + a1 * gs;
    const T vi = b2 * v[i] + a2 * gs * gs;
    m[i] = mi;
    v[i] = vi;
    den[i] = vi * inv_bc2;  // vhat
  }
  std::fill(den + l, den + lp, T(0));
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Aligned64> dm(den, lp);
  dm = dm.sqrt();
#pragma omp simd
  for (int64_t i = 0; i < l; ++i)
    w[i] -= lr * ((m[i] * inv_bc1) / (den[i] + eps) + wd * w[i]);
}

// The scalars of update t, shared by the whole-tensor and the row updates so
// that a row changes alike in both.
template <class T>
struct adamw_step {
  T b1, a1, b2, a2, inv_bc1, inv_bc2, lr, eps, s, wd;
  adamw_step(int64_t t, const adamw_config& cfg, double grad_scale, bool decay)
      : b1(T(cfg.beta1)),
        a1(T(1.0 - cfg.beta1)),
        b2(T(cfg.beta2)),
        a2(T(1.0 - cfg.beta2)),
        inv_bc1(T(1.0 / (1.0 - std::pow(cfg.beta1, static_cast<double>(t))))),
        inv_bc2(T(1.0 / (1.0 - std::pow(cfg.beta2, static_cast<double>(t))))),
        lr(T(cfg.lr)),
        eps(T(cfg.eps)),
        s(T(grad_scale)),
        wd(decay ? T(cfg.weight_decay) : T(0)) {}
  void run(T* w, T* m, T* v, const T* g, int64_t n) const {
    adamw_loop<T>(w, m, v, g, n, b1, a1, b2, a2, inv_bc1, inv_bc2, lr, eps, s, wd);
  }
  // One thread: the caller spreads the rows.
  void run_row(T* w, T* m, T* v, const T* g, int64_t n) const {
    for (int64_t o = 0; o < n; o += kBlk)
      adamw_block(w + o, m + o, v + o, g + o, std::min(kBlk, n - o), b1, a1, b2, a2, inv_bc1,
                  inv_bc2, lr, eps, s, wd);
  }
};

template <class T>
void check_update(const char* who, const basic_tensor<T>& w, const basic_tensor<T>& g, int64_t t) {
  if (g.rows() != w.rows() || g.cols() != w.cols())
    throw std::invalid_argument(std::string{who} + ": gradient shape differs from the weight's");
  if (t < 1) throw std::invalid_argument(std::string{who} + ": step t must be >= 1");
}

template <class T>
void adamw_update(basic_tensor<T>& w, const basic_tensor<T>& g, basic_tensor<T>& m,
                  basic_tensor<T>& v, int64_t t, const adamw_config& cfg, double grad_scale,
                  bool decay) {
  check_update("adamw_update", w, g, t);
  // Moments start at zero the first time they are shaped.
  m.resize(w.rows(), w.cols());
  v.resize(w.rows(), w.cols());
  adamw_step<T>(t, cfg, grad_scale, decay).run(w.data(), m.data(), v.data(), g.data(), w.size());
}

namespace {

// adamw_update_rows, and when `zero` is set, each row of g zeroed after its update.
template <class T>
void update_rows(const char* what, basic_tensor<T>& w, const basic_tensor<T>& g, T* zero,
                 basic_tensor<T>& m, basic_tensor<T>& v, const std::vector<int32_t>& rows, int64_t t,
                 const adamw_config& cfg, double grad_scale, bool decay) {
  check_update(what, w, g, t);
  for (int32_t r : rows)
    if (r < 0 || r >= w.rows())
      throw std::out_of_range(std::string(what) + ": row " + std::to_string(r) + " of "
                              + std::to_string(w.rows()));
  m.resize(w.rows(), w.cols());
  v.resize(w.rows(), w.cols());
  const adamw_step<T> step(t, cfg, grad_scale, decay);
  const int64_t cols = w.cols();
  // A row is far below adamw_loop's own threshold for threads: parallel over rows.
#pragma omp parallel for num_threads(compute_threads()) schedule(static) if (rows.size() > 256)
  for (int64_t k = 0; k < static_cast<int64_t>(rows.size()); ++k) {
    const int64_t o = static_cast<int64_t>(rows[static_cast<size_t>(k)]) * cols;
    step.run_row(w.data() + o, m.data() + o, v.data() + o, g.data() + o, cols);
    if (zero != nullptr) std::fill_n(zero + o, cols, T(0));
  }
}

}  // namespace

template <class T>
void adamw_update_rows(basic_tensor<T>& w, const basic_tensor<T>& g, basic_tensor<T>& m,
                       basic_tensor<T>& v, const std::vector<int32_t>& rows, int64_t t,
                       const adamw_config& cfg, double grad_scale, bool decay) {
  update_rows<T>("adamw_update_rows", w, g, nullptr, m, v, rows, t, cfg, grad_scale, decay);
}

template <class T>
void adamw_update_rows_zeroing(basic_tensor<T>& w, basic_tensor<T>& g, basic_tensor<T>& m,
                               basic_tensor<T>& v, const std::vector<int32_t>& rows, int64_t t,
                               const adamw_config& cfg, double grad_scale, bool decay) {
  update_rows<T>("adamw_update_rows", w, g, g.data(), m, v, rows, t, cfg, grad_scale, decay);
}

#define CLEAVE_INST(T)                                                                     \
  template double sum_of_squares<T>(const basic_tensor<T>&);                               \
  template double sum_of_squares_rows<T>(const basic_tensor<T>&, const std::vector<int32_t>&); \
  template void adamw_update<T>(basic_tensor<T>&, const basic_tensor<T>&, basic_tensor<T>&, \
                                basic_tensor<T>&, int64_t, const adamw_config&, double, bool); \
  template void adamw_update_rows<T>(basic_tensor<T>&, const basic_tensor<T>&, basic_tensor<T>&, \
                                     basic_tensor<T>&, const std::vector<int32_t>&, int64_t,    \
                                     const adamw_config&, double, bool);                 \
  template void adamw_update_rows_zeroing<T>(basic_tensor<T>&, basic_tensor<T>&, basic_tensor<T>&, \
                                             basic_tensor<T>&, const std::vector<int32_t>&, int64_t, \
                                             const adamw_config&, double, bool);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
