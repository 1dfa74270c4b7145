#pragma once
// Freivalds' test for a returned tile: is C = op(A)·op(B)? The PS draws a
// secret vector r of random signs and compares C·r with op(A)·(op(B)·r),
// which costs two matrix-vector products instead of a GEMM. Every K-split
// partial is such a product (of the blocks the tile names), so partials are
// checked the same way. Pure: plain arrays in, a verdict out.
//
// The tolerance. An honest device computes each c_ij = Σ_k a_ik b_kj in
// float32 with round-to-nearest, in any summation order, with or without
// FMA. Its error is a sum of at most 2K-1 rounding terms (K products, K-1
// additions), each δ·s with |δ| ≤ u = 2^-24 and s a product or a partial
// sum, so |s| ≤ Σ_k |a_ik b_kj| ≤ ‖a_i‖ ‖b_j‖ (Cauchy-Schwarz; to first
// order in u: the factor (1 + 2Ku) below covers the rest). The check's
// difference for row i is d_i = Σ_j r_j (c_ij - (AB)_ij), a sum of at most
// (2K-1)·n such terms. Under the standard probabilistic model of rounding
// (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019: the δ are mean-zero
// and independent) and with r independent of them, d_i is a martingale
// with bounded differences, and Azuma-Hoeffding gives
//
//   P(|d_i| ≥ λ·σ_i) ≤ 2·exp(-λ²/2),
//   σ_i = u·(1 + 2Ku)·sqrt(2K-1)·‖a_i‖·‖B‖_F,   ‖B‖_F² = Σ_j ‖b_j‖².
//
// λ = 8 makes that 2.5e-14 per row. The bound on |s| is loose by about
// sqrt(K) for data with mixed signs, so honest tiles sit far below it. The
// check's own arithmetic is in double (r is ±1, so r_j·c_ij is exact);
// its error, at most (K + n)·2^-53 times the same magnitudes, is added.
//
// What it catches: a corrupted row i (any change e_i to the row) moves d_i
// by Σ_j r_j e_ij. A change to one element is seen whole, whatever r is;
// changes to several elements of a row cancel with probability at most 1/2
// per row, and every corrupted row is a fresh chance. So a tile is refused
// when a row's change exceeds its tolerance, which is about λ·u·K·sqrt(2n)
// relative to a typical element for data of mixed signs. A change below
// it is also below what one float GEMM can promise, and no check on the
// result alone can tell it from rounding.
//
// Tiles that share a block of op(A) (a row of the grid) can be checked
// together: Σ_t C_t·r_t against op(A)·Σ_t op(B_t)·r_t, which reads the
// block of A once instead of once per tile. The bound is the same sum of
// rounding terms, over Σ_t n_t columns and Σ_t ‖op(B_t)‖_F². A refusal
// then names a row of the group; checking its tiles one by one finds the
// wrong one. Changes in two tiles of a row cancel only as changes within
// one tile do: with probability at most 1/2 per row, r being secret.
//
// Elementwise (for results computed twice, --replicate): each element of an
// honest result lies within λ·u·(1+2Ku)·sqrt(2K-1)·‖a_i‖·‖b_j‖ of the exact
// product by the same argument, so two honest results differ by at most
// twice that.

#include <cstdint>
#include <random>
#include <vector>

namespace cleave {

// A GEMM operand's block as stored (row-major, `ld` floats between rows);
// the product uses its transpose when `trans`.
struct stored_block {
  const float* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  bool trans = false;
  int64_t op_rows() const { return trans ? cols : rows; }
  int64_t op_cols() const { return trans ? rows : cols; }
};

// What the check needs of op(A)'s block, computed once per block: its
// rows' norms.
struct a_digest {
  std::vector<double> row_norms;
  bool finite = true;
};

// What the check needs of op(B)'s block and r's window over its columns,
// computed once per block: op(B)·r, its columns' norms and ‖op(B)‖_F.
struct b_digest {
  std::vector<double> b_r;
  std::vector<double> col_norms;
  double frobenius = 0;
  bool finite = true;
};

// What a set of tiles sharing op(A)'s block brought so far: per row of the
// block, Σ_t (C_t·r_t) and Σ_t Σ_j |c_ij|; and Σ_t op(B_t)·r_t, Σ_t
// ‖op(B_t)‖_F² and Σ_t n_t.
struct row_sums {
  std::vector<double> c_r, magnitude;
  std::vector<double> b_r;
  double frobenius2 = 0;
  int64_t columns = 0;
  bool finite = true;  // the B blocks' digests were finite

  row_sums(int64_t rows, int64_t k)
      : c_r(static_cast<size_t>(rows), 0.0), magnitude(static_cast<size_t>(rows), 0.0),
        b_r(static_cast<size_t>(k), 0.0) {}
  // Adds tile C (rows x cols, packed) with r's window `r` and its B block's digest.
  void add(const float* c, int64_t cols, const double* r, const b_digest& bd);
};

struct verdict {
  bool checked = false;  // false: the operands are not finite, nothing could be judged
  bool passed = true;
  int64_t worst_row = -1;   // the row furthest past (or nearest to) its tolerance
  double worst_ratio = 0;   // |d_i| / tolerance_i there: above 1 is a refusal
};

class freivalds {
 public:
  static constexpr double default_lambda = 8;
  explicit freivalds(double lambda = default_lambda) : lambda_(lambda) {}

  // A fresh secret vector of n random signs.
  static std::vector<double> draw_signs(int64_t n, std::mt19937_64& rng);

  static a_digest digest_a(const stored_block& a);
  // `r` holds op_cols() signs: r's window over the block's columns.
  static b_digest digest_b(const stored_block& b, const double* r);

  // The tile C (rows x cols, row-major, packed) against op(A)·op(B), with
  // `r` the same window digest_b saw.
  verdict check(const float* c, int64_t rows, int64_t cols, const stored_block& a,
                const b_digest& bd, const double* r) const;
  // Tiles sharing op(A)'s block `a`, summed: one pass over the block.
  verdict check(const stored_block& a, const row_sums& sums) const;

  // |d_i| allowed for a row with norm `row_norm`, inner dimension k, n
  // columns and ‖op(B)‖_F = `frobenius`.
  double row_tolerance(int64_t k, int64_t n, double row_norm, double frobenius) const;
  // What the check allows a row: row_tolerance plus its double dots' own
  // error, which grows with the row's Σ_j |c_ij| (`magnitude`).
  double check_tolerance(int64_t k, int64_t n, double row_norm, double frobenius,
                         double magnitude) const;
  // |c1_ij - c2_ij| allowed between two honest results of the element.
  double element_tolerance(int64_t k, double row_norm, double col_norm) const;

  // Two results of the same tile (rows x cols, packed): the first element
  // further apart than element_tolerance, or -1 when they agree.
  int64_t first_disagreement(const float* c1, const float* c2, int64_t rows, int64_t cols,
                             int64_t k, const a_digest& ad, const b_digest& bd) const;

  double lambda() const { return lambda_; }

 private:
  double lambda_;
};

}  // namespace cleave
