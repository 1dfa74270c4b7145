#include "actors/ps/verify/freivalds.hpp"

#include "actors/ps/verify/mixed_dots.hpp"
#include "kernels/bf16.hpp"
#include "kernels/row_parts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cleave {

namespace {

constexpr double unit_roundoff = 0x1p-24;  // float32, round to nearest
constexpr double double_roundoff = 0x1p-53;

void add_squares(const float* x, double* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += static_cast<double>(x[i]) * x[i];
}

// Σ x_i·r_i for each probe and Σ |x_i|.
void dots_and_magnitude(const float* x, const probe_window& r, int64_t n, double* dots,
                        double& magnitude) {
  static_assert(freivalds_probes == 2, "mixed_dots.hpp's loops take two probes");
  cleave::dots_and_magnitude(x, r[0], r[1], n, dots[0], dots[1], magnitude);
}

bool all_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

void add_b_r(std::array<std::vector<double>, freivalds_probes>& into, const b_digest& bd) {
  for (int v = 0; v < freivalds_probes; ++v)
    for (size_t k = 0; k < into[v].size() && k < bd.b_r[v].size(); ++k) into[v][k] += bd.b_r[v][k];
}

std::vector<double> freivalds::draw_probes(int64_t n, std::mt19937_64& rng) {
  std::vector<double> r(static_cast<size_t>(freivalds_probes * n));
  std::uniform_real_distribution<double> magnitude(1.0, 2.0);
  for (auto& x : r) x = (rng() & 1) != 0 ? magnitude(rng) : -magnitude(rng);
  return r;
}

probe_window freivalds::window(const std::vector<double>& probes, int64_t n, int64_t n0) {
  probe_window w;
  for (int v = 0; v < freivalds_probes; ++v) w[static_cast<size_t>(v)] = probes.data() + v * n + n0;
  return w;
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

b_digest freivalds::digest_b(const stored_block& b, const probe_window& r) {
  // op(B) is k x n: its columns are stored columns, or stored rows when
  // the product uses the transpose. A large block is shared among the
  // pass threads (row_parts.hpp): by stored rows when each gives its own
  // b_r entry, by ranges of stored columns (four wide, as axpy2's vector
  // loop) when b_r sums over stored rows. Either way b_r keeps its bits; the columns'
  // squared norms, which only size the tolerance, are then summed over the
  // ranges, and agree with one thread's to double rounding.
  b_digest d;
  const int64_t k = b.op_rows();
  const int64_t n = b.op_cols();
  for (auto& v : d.b_r) v.assign(static_cast<size_t>(k), 0.0);
  d.col_norms.assign(static_cast<size_t>(n), 0.0);
  const double bytes = static_cast<double>(b.rows) * static_cast<double>(b.cols) * sizeof(float);
  if (b.trans) {
    constexpr int64_t width = 4;
    const int parts = row_parts(b.cols, bytes, width);
    std::vector<double> squares(static_cast<size_t>(parts * b.rows));
    for_each_part(parts, b.cols, width, [&](int part, int64_t c0, int64_t c1) {
      for (int64_t s = 0; s < b.rows; ++s) {
        const float* row = b.data + s * b.ld + c0;
        axpy2(r[0][s], r[1][s], row, d.b_r[0].data() + c0, d.b_r[1].data() + c0, nullptr, c1 - c0);
        squares[static_cast<size_t>(part * b.rows + s)] = sum_of_squares(row, c1 - c0);
      }
    });
    for (int part = 0; part < parts; ++part)
      for (int64_t s = 0; s < b.rows; ++s)
        d.col_norms[static_cast<size_t>(s)] += squares[static_cast<size_t>(part * b.rows + s)];
  } else {
    const int parts = row_parts(b.rows, bytes);
    std::vector<std::vector<double>> squares(static_cast<size_t>(parts));
    for_each_part(parts, b.rows, 1, [&](int part, int64_t s0, int64_t s1) {
      auto& sq = part == 0 ? d.col_norms : squares[static_cast<size_t>(part)];
      sq.assign(static_cast<size_t>(b.cols), 0.0);
      for (int64_t s = s0; s < s1; ++s) {
        const float* row = b.data + s * b.ld;
        double dots[freivalds_probes];
        double unused = 0;
        dots_and_magnitude(row, r, b.cols, dots, unused);
        for (int v = 0; v < freivalds_probes; ++v) d.b_r[v][static_cast<size_t>(s)] = dots[v];
        add_squares(row, sq.data(), b.cols);
      }
    });
    for (int part = 1; part < parts; ++part)
      for (int64_t j = 0; j < b.cols; ++j)
        d.col_norms[static_cast<size_t>(j)] += squares[static_cast<size_t>(part)][static_cast<size_t>(j)];
  }
  bool finite = true;
  for (int64_t j = 0; j < n; ++j) {
    const double sq = d.col_norms[static_cast<size_t>(j)];
    for (int v = 0; v < freivalds_probes; ++v) d.weighted2[v] += r[v][j] * r[v][j] * sq;
    d.col_norms[static_cast<size_t>(j)] = std::sqrt(sq);
  }
  for (int v = 0; v < freivalds_probes; ++v)
    finite = finite && std::isfinite(d.weighted2[v]) && all_finite(d.b_r[v]);
  d.finite = finite;
  return d;
}

double freivalds::row_tolerance(int64_t k, double row_norm, double weighted) const {
  const double kk = static_cast<double>(std::max<int64_t>(k, 1));
  return lambda_ * unit_roundoff * (1 + 2 * kk * unit_roundoff) * std::sqrt(2 * kk - 1) * row_norm
         * weighted;
}

double freivalds::check_tolerance(int64_t k, int64_t n, double row_norm, double weighted,
                                  double magnitude) const {
  // The double dots: over K terms for op(A)·(op(B)·r) (each |r_j| ≤ 2, so
  // |op(B)·r| ≤ 2·sqrt(n)·‖B‖_F ≤ 2·sqrt(n)·‖B‖_r), and n for C·r.
  const double nn = static_cast<double>(std::max<int64_t>(n, 1));
  const double own = static_cast<double>(k + n) * double_roundoff
                     * (2 * std::sqrt(nn) * row_norm * weighted + 2 * magnitude);
  return row_tolerance(k, row_norm, weighted) + own;
}

double freivalds::rounding_tolerance(double half_ulps2) const {
  return lambda_ * 2 * std::sqrt(half_ulps2);
}

double freivalds::element_tolerance(int64_t k, double row_norm, double col_norm) const {
  return 2 * row_tolerance(k, row_norm, col_norm);
}

row_sums::row_sums(int64_t rows, int64_t k, wire_precision res)
    : magnitude(static_cast<size_t>(rows), 0.0), results(res) {
  for (auto& v : c_r) v.assign(static_cast<size_t>(rows), 0.0);
  for (auto& v : b_r) v.assign(static_cast<size_t>(k), 0.0);
  if (results == wire_precision::bf16) half_ulps2.assign(static_cast<size_t>(rows), 0.0);
}

bool row_sums::add(const float* c, int64_t cols, const probe_window& r, const b_digest& bd,
                   int64_t ld, float* copy_to, int64_t copy_ld) {
  const size_t rows = magnitude.size();
  if (ld <= 0) ld = cols;
  std::vector<double> tile(rows * (freivalds_probes + 1));  // per row: the dots, then Σ|c|
  // Rows are independent: a large result's are shared among the pass threads, each
  // row done by the same loop (row_parts.hpp), so the sums keep their bits.
  const auto n_rows = static_cast<int64_t>(rows);
  const int parts = row_parts(n_rows, static_cast<double>(n_rows) * static_cast<double>(cols) * sizeof(float));
  for_each_part(parts, n_rows, 1, [&](int, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      double* out = tile.data() + i * (freivalds_probes + 1);
      const float* row = c + i * ld;
      if (copy_to != nullptr)
        dots_and_magnitude_copy(row, r[0], r[1], cols, out[0], out[1], out[freivalds_probes],
                                copy_to + i * copy_ld);
      else
        dots_and_magnitude(row, r, cols, out, out[freivalds_probes]);
    }
  });
  double total = 0;
  for (size_t i = 0; i < rows; ++i) total += tile[i * (freivalds_probes + 1) + freivalds_probes];
  if (!std::isfinite(total)) return false;
  if (results == wire_precision::bf16)
    for_each_part(parts, n_rows, 1, [&](int, int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const float* row = c + i * ld;
        double h2 = 0;
        for (int64_t j = 0; j < cols; ++j) {
          const double h = bf16_half_ulp(row[j]);
          h2 += h * h;
        }
        half_ulps2[static_cast<size_t>(i)] += h2;
      }
    });
  for (size_t i = 0; i < rows; ++i) {
    const double* in = tile.data() + i * (freivalds_probes + 1);
    for (int v = 0; v < freivalds_probes; ++v) c_r[v][i] += in[v];
    magnitude[i] += in[freivalds_probes];
  }
  add_b_r(b_r, bd);
  for (int v = 0; v < freivalds_probes; ++v) weighted2[v] += bd.weighted2[v];
  columns += cols;
  finite = finite && bd.finite;
  return true;
}

verdict freivalds::check(const float* c, int64_t rows, int64_t cols, const stored_block& a,
                         const b_digest& bd, const probe_window& r, int64_t ld,
                         wire_precision results) const {
  row_sums sums(rows, a.op_cols(), results);
  if (!sums.add(c, cols, r, bd, ld)) {
    verdict v;
    v.checked = true;
    v.passed = false;
    v.worst_ratio = std::numeric_limits<double>::infinity();
    return v;
  }
  return check(a, sums);
}

a_expectation freivalds::expect(const stored_block& a, const probe_window& y) {
  // op(A)·y for every probe and the norms of op(A)'s rows, in one pass over
  // the block: dots per stored row, or axpys per stored row when the
  // product uses the transpose. Either way memory is read in order. A large
  // block is shared among the pass threads by stored rows for the dots and by
  // ranges of stored columns (four wide, as the axpys' vector loop) for the
  // axpys: each output is computed as on one thread, bit for bit.
  a_expectation e;
  const auto rows = static_cast<size_t>(a.op_rows());
  auto& expected = e.expected;
  for (auto& x : expected) x.assign(rows, 0.0);
  auto& norms = e.norms;
  norms.assign(rows, 0.0);
  const double bytes = static_cast<double>(a.rows) * static_cast<double>(a.cols) * sizeof(float);
  if (a.trans) {
    constexpr int64_t width = 4;
    const int parts = row_parts(a.cols, bytes, width);
    for_each_part(parts, a.cols, width, [&](int, int64_t c0, int64_t c1) {
      double* out0 = expected[0].data() + c0;
      double* out1 = expected[1].data() + c0;
      double* sq = norms.data() + c0;
      for (int64_t r = 0; r < a.rows; ++r) {
        const float* row = a.data + r * a.ld + c0;
        if (r + 1 < a.rows) {
          axpy2_two_rows(y[0][r], y[1][r], row, y[0][r + 1], y[1][r + 1], row + a.ld, out0, out1, sq, c1 - c0);
          ++r;
        } else {
          axpy2(y[0][r], y[1][r], row, out0, out1, sq, c1 - c0);
        }
      }
    });
  } else {
    const int parts = row_parts(a.rows, bytes);
    for_each_part(parts, a.rows, 1, [&](int, int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        double sq = 0;
        cleave::dots_and_squares(a.data + r * a.ld, y[0], y[1], a.cols, expected[0][static_cast<size_t>(r)],
                                 expected[1][static_cast<size_t>(r)], sq);
        norms[static_cast<size_t>(r)] = sq;
      }
    });
  }
  for (double& x : norms) x = std::sqrt(x);
  return e;
}

verdict freivalds::check(const stored_block& a, const row_sums& sums) const {
  return check(expect(a, probe_window{sums.b_r[0].data(), sums.b_r[1].data()}), a.op_cols(), sums);
}

verdict freivalds::check(const a_expectation& e, int64_t k, const row_sums& sums) const {
  verdict v;
  const auto rows = e.norms.size();
  const auto& expected = e.expected;
  const auto& norms = e.norms;
  if (!sums.finite || !all_finite(norms)) return v;  // overflowed operands: nothing can be judged
  v.checked = true;
  for (size_t i = 0; i < rows; ++i)
    for (int p = 0; p < freivalds_probes; ++p) {
      const double d = sums.c_r[p][i] - expected[p][i];
      double tol = check_tolerance(k, sums.columns, norms[i], std::sqrt(sums.weighted2[p]),
                                   sums.magnitude[i]);
      if (sums.results == wire_precision::bf16) tol += rounding_tolerance(sums.half_ulps2[i]);
      // Written so that NaN in a result fails the test.
      const double ratio =
        tol > 0 ? std::fabs(d) / tol : (d == 0 ? 0 : std::numeric_limits<double>::infinity());
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
                                      const b_digest& bd, wire_precision results) const {
  const bool bf16 = results == wire_precision::bf16;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float x = c1[i * cols + j], y = c2[i * cols + j];
      const double diff = std::fabs(static_cast<double>(x) - y);
      double tol = element_tolerance(k, ad.row_norms[static_cast<size_t>(i)],
                                     bd.col_norms[static_cast<size_t>(j)]);
      if (bf16) tol += bf16_half_ulp(x) + bf16_half_ulp(y);
      if (!(diff <= tol)) return i * cols + j;
    }
  return -1;
}

}  // namespace cleave
