#include "actors/ps/verify/freivalds.hpp"

#include <cmath>
#include <limits>

namespace cleave {

namespace {

constexpr double unit_roundoff = 0x1p-24;  // float32, round to nearest
constexpr double double_roundoff = 0x1p-53;

// Σ x_i·y_i in double over n floats. Eight lanes of vertical adds, so the
// compiler vectorises it without licence to reorder a reduction.
double dot(const float* x, const double* y, int64_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(x[i + l]) * y[i + l];
  double s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i) s += static_cast<double>(x[i]) * y[i];
  return s;
}

double sum_of_squares(const float* x, int64_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(x[i + l]) * x[i + l];
  double s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// Σ x_i·y_i and Σ |x_i| in one pass, the same way.
std::pair<double, double> dot_and_magnitude(const float* x, const double* y, int64_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  double mag[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      const double v = static_cast<double>(x[i + l]);
      lane[l] += v * y[i + l];
      mag[l] += std::fabs(v);
    }
  double s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  double m = ((mag[0] + mag[1]) + (mag[2] + mag[3])) + ((mag[4] + mag[5]) + (mag[6] + mag[7]));
  for (; i < n; ++i) {
    s += static_cast<double>(x[i]) * y[i];
    m += std::fabs(static_cast<double>(x[i]));
  }
  return {s, m};
}

// out_i += s·x_i
void axpy(double s, const float* x, double* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += s * static_cast<double>(x[i]);
}

void add_squares(const float* x, double* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += static_cast<double>(x[i]) * x[i];
}

// op(A)·y and the norms of op(A)'s rows, in one pass over the block: a
// dot per stored row, or an axpy per stored row when the product uses the
// transpose. Either way memory is read in order.
void times_with_norms(const stored_block& a, const double* y, std::vector<double>& out,
                      std::vector<double>& norms) {
  out.assign(static_cast<size_t>(a.op_rows()), 0.0);
  norms.assign(static_cast<size_t>(a.op_rows()), 0.0);
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* row = a.data + r * a.ld;
    if (a.trans) {
      axpy(y[r], row, out.data(), a.cols);
      add_squares(row, norms.data(), a.cols);
    } else {
      out[static_cast<size_t>(r)] = dot(row, y, a.cols);
      norms[static_cast<size_t>(r)] = sum_of_squares(row, a.cols);
    }
  }
  for (double& x : norms) x = std::sqrt(x);
}

bool all_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

std::vector<double> freivalds::draw_signs(int64_t n, std::mt19937_64& rng) {
  std::vector<double> r(static_cast<size_t>(n));
  uint64_t bits = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 64 == 0) bits = rng();
    r[static_cast<size_t>(i)] = (bits & 1) != 0 ? 1.0 : -1.0;
    bits >>= 1;
  }
  return r;
}

a_digest freivalds::digest_a(const stored_block& a) {
  a_digest d;
  d.row_norms.assign(static_cast<size_t>(a.op_rows()), 0.0);
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* row = a.data + r * a.ld;
    if (a.trans)
      add_squares(row, d.row_norms.data(), a.cols);
    else
      d.row_norms[static_cast<size_t>(r)] = sum_of_squares(row, a.cols);
  }
  for (double& x : d.row_norms) x = std::sqrt(x);
  d.finite = all_finite(d.row_norms);
  return d;
}

b_digest freivalds::digest_b(const stored_block& b, const double* r) {
  // op(B) is k x n: its columns are stored columns, or stored rows when
  // the product uses the transpose.
  b_digest d;
  const int64_t k = b.op_rows();
  const int64_t n = b.op_cols();
  d.b_r.assign(static_cast<size_t>(k), 0.0);
  d.col_norms.assign(static_cast<size_t>(n), 0.0);
  for (int64_t s = 0; s < b.rows; ++s) {
    const float* row = b.data + s * b.ld;
    if (b.trans) {
      axpy(r[s], row, d.b_r.data(), b.cols);
      d.col_norms[static_cast<size_t>(s)] = sum_of_squares(row, b.cols);
    } else {
      d.b_r[static_cast<size_t>(s)] = dot(row, r, b.cols);
      add_squares(row, d.col_norms.data(), b.cols);
    }
  }
  double frob = 0;
  for (double& x : d.col_norms) {
    frob += x;
    x = std::sqrt(x);
  }
  d.frobenius = std::sqrt(frob);
  d.finite = std::isfinite(d.frobenius) && all_finite(d.b_r);
  return d;
}

double freivalds::row_tolerance(int64_t k, int64_t n, double row_norm, double frobenius) const {
  const double kk = static_cast<double>(std::max<int64_t>(k, 1));
  const double growth = 1 + 2 * kk * unit_roundoff;
  const double scale = row_norm * frobenius;
  const double rounding = lambda_ * unit_roundoff * growth * std::sqrt(2 * kk - 1) * scale;
  // The check's own double arithmetic over K and n terms of the same size.
  const double own = static_cast<double>(k + n) * double_roundoff * scale
                     * std::sqrt(static_cast<double>(std::max<int64_t>(n, 1)));
  return rounding + own;
}

double freivalds::check_tolerance(int64_t k, int64_t n, double row_norm, double frobenius,
                                  double magnitude) const {
  return row_tolerance(k, n, row_norm, frobenius)
         + static_cast<double>(n) * double_roundoff * magnitude;
}

double freivalds::element_tolerance(int64_t k, double row_norm, double col_norm) const {
  const double kk = static_cast<double>(std::max<int64_t>(k, 1));
  return 2 * lambda_ * unit_roundoff * (1 + 2 * kk * unit_roundoff) * std::sqrt(2 * kk - 1)
         * row_norm * col_norm;
}

void row_sums::add(const float* c, int64_t cols, const double* r, const b_digest& bd) {
  for (size_t i = 0; i < c_r.size(); ++i) {
    const auto [cr, magnitude_i] = dot_and_magnitude(c + static_cast<int64_t>(i) * cols, r, cols);
    c_r[i] += cr;
    magnitude[i] += magnitude_i;
  }
  for (size_t k = 0; k < b_r.size() && k < bd.b_r.size(); ++k) b_r[k] += bd.b_r[k];
  frobenius2 += bd.frobenius * bd.frobenius;
  columns += cols;
  finite = finite && bd.finite;
}

verdict freivalds::check(const float* c, int64_t rows, int64_t cols, const stored_block& a,
                         const b_digest& bd, const double* r) const {
  row_sums sums(rows, a.op_cols());
  sums.add(c, cols, r, bd);
  return check(a, sums);
}

verdict freivalds::check(const stored_block& a, const row_sums& sums) const {
  verdict v;
  std::vector<double> expected, norms;
  times_with_norms(a, sums.b_r.data(), expected, norms);
  if (!sums.finite || !all_finite(norms)) return v;  // overflowed operands: nothing can be judged
  v.checked = true;
  const int64_t k = a.op_cols();
  const double frobenius = std::sqrt(sums.frobenius2);
  for (size_t i = 0; i < expected.size(); ++i) {
    const double d = sums.c_r[i] - expected[i];
    // Σ_j |c_ij| is what the double dots' own error scales with.
    const double tol = check_tolerance(k, sums.columns, norms[i], frobenius, sums.magnitude[i]);
    // Written so that NaN in a result fails the test.
    const double ratio = tol > 0 ? std::fabs(d) / tol : (d == 0 ? 0 : std::numeric_limits<double>::infinity());
    if (!(ratio <= 1)) {
      v.passed = false;
      v.worst_row = static_cast<int64_t>(i);
      v.worst_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
      return v;
    }
    if (ratio >= v.worst_ratio) {
      v.worst_ratio = ratio;
      v.worst_row = static_cast<int64_t>(i);
    }
  }
  return v;
}

int64_t freivalds::first_disagreement(const float* c1, const float* c2, int64_t rows,
                                      int64_t cols, int64_t k, const a_digest& ad,
                                      const b_digest& bd) const {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double diff = std::fabs(static_cast<double>(c1[i * cols + j]) - c2[i * cols + j]);
      const double tol = element_tolerance(k, ad.row_norms[static_cast<size_t>(i)],
                                           bd.col_norms[static_cast<size_t>(j)]);
      if (!(diff <= tol)) return i * cols + j;
    }
  return -1;
}

}  // namespace cleave
