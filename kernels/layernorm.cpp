#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/ops.hpp"
#include "kernels/reproducible.hpp"

namespace cleave {

namespace {


}  // namespace

template <class T>
void layernorm_forward(const basic_tensor<T>& x, const basic_tensor<T>& gamma,
                       const basic_tensor<T>& beta, T eps, basic_tensor<T>& y,
                       layernorm_cache<T>& cache) {
  const int64_t n = x.rows(), d = x.cols();
  if (gamma.size() != d || beta.size() != d)
    throw std::invalid_argument("layernorm_forward: gamma/beta size does not match x columns");
  y.resize(n, d);
  cache.mean.resize(n, 1);
  cache.rstd.resize(n, 1);
  const T* xp = x.data();
  const T* gp = gamma.data();
  const T* bp = beta.data();
  T* yp = y.data();
  T* mp = cache.mean.data();
  T* rp = cache.rstd.data();
  const T inv_d = T(1) / T(d);
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > (1 << 14))
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = xp + r * d;
    T* yr = yp + r * d;
    // Fixed-lane sums (bits independent of addresses); two-pass variance
    // avoids cancellation for rows with a large mean.
    const T mean = detail::lane_sum<T>(d, [&](int64_t c) { return xr[c]; }) * inv_d;
    const T q = detail::lane_sum<T>(d, [&](int64_t c) {
      const T z = xr[c] - mean;
      return z * z;
    });
    const T rstd = T(1) / std::sqrt(q * inv_d + eps);
    mp[r] = mean;
    rp[r] = rstd;
#pragma omp simd
    for (int64_t c = 0; c < d; ++c) yr[c] = (xr[c] - mean) * rstd * gp[c] + bp[c];
  }
}

template <class T>
void layernorm_backward(const basic_tensor<T>& x, const basic_tensor<T>& gamma,
                        const layernorm_cache<T>& cache, const basic_tensor<T>& dy,
                        basic_tensor<T>& dx, basic_tensor<T>& dgamma, basic_tensor<T>& dbeta) {
  const int64_t n = x.rows(), d = x.cols();
  if (gamma.size() != d || dy.rows() != n || dy.cols() != d || cache.mean.size() != n ||
      cache.rstd.size() != n)
    throw std::invalid_argument("layernorm_backward: shape mismatch");
  dx.resize(n, d);
  if (dgamma.size() != d) dgamma.resize(1, d);
  if (dbeta.size() != d) dbeta.resize(1, d);
  const T* xp = x.data();
  const T* gp = gamma.data();
  const T* mp = cache.mean.data();
  const T* rp = cache.rstd.data();
  const T* dyp = dy.data();
  T* dxp = dx.data();
  T* dgp = dgamma.data();
  T* dbp = dbeta.data();
  const T inv_d = T(1) / T(d);
  const int nt = compute_threads();

  // Parameter gradients: column blocks, rows summed in order (thread-count
  // independent, no races).
  constexpr int64_t blk = 128;
  const int64_t nblk = (d + blk - 1) / blk;
#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > (1 << 15) && nblk > 1)
  for (int64_t ib = 0; ib < nblk; ++ib) {
    const int64_t c0 = ib * blk;
    const int64_t w = std::min(blk, d - c0);
    T ag[blk], ab[blk];
    for (int64_t c = 0; c < w; ++c) ag[c] = ab[c] = T(0);
    for (int64_t r = 0; r < n; ++r) {
      const T* xr = xp + r * d + c0;
      const T* gr = dyp + r * d + c0;
      const T mean = mp[r], rstd = rp[r];
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) {
        ag[c] += gr[c] * (xr[c] - mean) * rstd;
        ab[c] += gr[c];
      }
    }
    for (int64_t c = 0; c < w; ++c) {
      dgp[c0 + c] += ag[c];
      dbp[c0 + c] += ab[c];
    }
  }

  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > (1 << 14))
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = xp + r * d;
    const T* gr = dyp + r * d;
    T* dr = dxp + r * d;
    const T mean = mp[r], rstd = rp[r];
    const T sg = detail::lane_sum<T>(d, [&](int64_t c) { return gr[c] * gp[c]; });
    const T sgx = detail::lane_sum<T>(d, [&](int64_t c) { return gr[c] * gp[c] * (xr[c] - mean) * rstd; });
    const T mg = sg * inv_d, mgx = sgx * inv_d;
#pragma omp simd
    for (int64_t c = 0; c < d; ++c) {
      const T xhat = (xr[c] - mean) * rstd;
      dr[c] = rstd * (gr[c] * gp[c] - mg - xhat * mgx);
    }
  }
}

#define CLEAVE_INST(T)                                                                        \
  template void layernorm_forward<T>(const basic_tensor<T>&, const basic_tensor<T>&,          \
                                     const basic_tensor<T>&, T, basic_tensor<T>&,             \
                                     layernorm_cache<T>&);                                    \
  template void layernorm_backward<T>(const basic_tensor<T>&, const basic_tensor<T>&,         \
                                      const layernorm_cache<T>&, const basic_tensor<T>&,      \
                                      basic_tensor<T>&, basic_tensor<T>&, basic_tensor<T>&);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
