#include "actors/ps/verify/mixed_dots.hpp"

#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define CLEAVE_MIXED_AVX2 1
#endif

namespace cleave {

namespace {

#ifdef CLEAVE_MIXED_AVX2
double horizontal_sum(__m256d v) {
  const __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
  const __m128d s = _mm_add_pd(lo, hi);
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
#endif

}  // namespace

double sum_of_squares(const float* x, int64_t n) {
  int64_t i = 0;
  double s = 0;
#ifdef CLEAVE_MIXED_AVX2
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  for (; i + 8 <= n; i += 8) {
    const __m256d v0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d v1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    a0 = _mm256_fmadd_pd(v0, v0, a0);
    a1 = _mm256_fmadd_pd(v1, v1, a1);
  }
  s = horizontal_sum(_mm256_add_pd(a0, a1));
#endif
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

namespace {

// Two dots and, in the same pass, Σ |x_i| or Σ x_i²; and x copied to
// `copy_to` when it is not null.
template <bool squares>
void dots_and(const float* x, const double* y0, const double* y1, int64_t n, double& dot0,
              double& dot1, double& third, float* copy_to = nullptr) {
  int64_t i = 0;
  double d0 = 0, d1 = 0, m = 0;
#ifdef CLEAVE_MIXED_AVX2
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d p0a = _mm256_setzero_pd(), p0b = _mm256_setzero_pd();
  __m256d p1a = _mm256_setzero_pd(), p1b = _mm256_setzero_pd();
  __m256d ma = _mm256_setzero_pd(), mb = _mm256_setzero_pd();
  for (; i + 8 <= n; i += 8) {
    const __m128 xa = _mm_loadu_ps(x + i), xb = _mm_loadu_ps(x + i + 4);
    if (copy_to != nullptr) {
      _mm_storeu_ps(copy_to + i, xa);
      _mm_storeu_ps(copy_to + i + 4, xb);
    }
    const __m256d va = _mm256_cvtps_pd(xa);
    const __m256d vb = _mm256_cvtps_pd(xb);
    p0a = _mm256_fmadd_pd(va, _mm256_loadu_pd(y0 + i), p0a);
    p0b = _mm256_fmadd_pd(vb, _mm256_loadu_pd(y0 + i + 4), p0b);
    p1a = _mm256_fmadd_pd(va, _mm256_loadu_pd(y1 + i), p1a);
    p1b = _mm256_fmadd_pd(vb, _mm256_loadu_pd(y1 + i + 4), p1b);
    if (squares) {
      ma = _mm256_fmadd_pd(va, va, ma);
      mb = _mm256_fmadd_pd(vb, vb, mb);
    } else {
      ma = _mm256_add_pd(ma, _mm256_andnot_pd(sign, va));
      mb = _mm256_add_pd(mb, _mm256_andnot_pd(sign, vb));
    }
  }
  d0 = horizontal_sum(_mm256_add_pd(p0a, p0b));
  d1 = horizontal_sum(_mm256_add_pd(p1a, p1b));
  m = horizontal_sum(_mm256_add_pd(ma, mb));
#endif
  for (; i < n; ++i) {
    if (copy_to != nullptr) copy_to[i] = x[i];
    const double v = static_cast<double>(x[i]);
    d0 += v * y0[i];
    d1 += v * y1[i];
    m += squares ? v * v : std::fabs(v);
  }
  dot0 = d0;
  dot1 = d1;
  third = m;
}

}  // namespace

void dots_and_magnitude(const float* x, const double* y0, const double* y1, int64_t n,
                        double& dot0, double& dot1, double& magnitude) {
  dots_and<false>(x, y0, y1, n, dot0, dot1, magnitude);
}

void dots_and_magnitude_copy(const float* x, const double* y0, const double* y1, int64_t n,
                             double& dot0, double& dot1, double& magnitude, float* copy_to) {
  dots_and<false>(x, y0, y1, n, dot0, dot1, magnitude, copy_to);
}

void dots_and_squares(const float* x, const double* y0, const double* y1, int64_t n,
                      double& dot0, double& dot1, double& squares) {
  dots_and<true>(x, y0, y1, n, dot0, dot1, squares);
}

void axpy2(double s0, double s1, const float* x, double* out0, double* out1, double* squares,
           int64_t n) {
  int64_t i = 0;
#ifdef CLEAVE_MIXED_AVX2
  const __m256d b0 = _mm256_set1_pd(s0), b1 = _mm256_set1_pd(s1);
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    _mm256_storeu_pd(out0 + i, _mm256_fmadd_pd(b0, v, _mm256_loadu_pd(out0 + i)));
    _mm256_storeu_pd(out1 + i, _mm256_fmadd_pd(b1, v, _mm256_loadu_pd(out1 + i)));
    if (squares != nullptr)
      _mm256_storeu_pd(squares + i, _mm256_fmadd_pd(v, v, _mm256_loadu_pd(squares + i)));
  }
#endif
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    out0[i] += s0 * v;
    out1[i] += s1 * v;
    if (squares != nullptr) squares[i] += v * v;
  }
}

void axpy2_two_rows(double s0, double s1, const float* x, double t0, double t1, const float* z,
                    double* out0, double* out1, double* squares, int64_t n) {
  int64_t i = 0;
#ifdef CLEAVE_MIXED_AVX2
  const __m256d a0 = _mm256_set1_pd(s0), a1 = _mm256_set1_pd(s1);
  const __m256d b0 = _mm256_set1_pd(t0), b1 = _mm256_set1_pd(t1);
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d w = _mm256_cvtps_pd(_mm_loadu_ps(z + i));
    _mm256_storeu_pd(out0 + i,
                     _mm256_fmadd_pd(b0, w, _mm256_fmadd_pd(a0, v, _mm256_loadu_pd(out0 + i))));
    _mm256_storeu_pd(out1 + i,
                     _mm256_fmadd_pd(b1, w, _mm256_fmadd_pd(a1, v, _mm256_loadu_pd(out1 + i))));
    _mm256_storeu_pd(squares + i,
                     _mm256_fmadd_pd(w, w, _mm256_fmadd_pd(v, v, _mm256_loadu_pd(squares + i))));
  }
#endif
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]), w = static_cast<double>(z[i]);
    out0[i] += s0 * v + t0 * w;
    out1[i] += s1 * v + t1 * w;
    squares[i] += v * v + w * w;
  }
}

}  // namespace cleave
