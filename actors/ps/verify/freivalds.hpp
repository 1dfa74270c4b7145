#pragma once
// Freivalds' test for a returned tile: is C = op(A)·op(B)? The PS draws
// secret random vectors r and compares C·r with op(A)·(op(B)·r), which
// costs matrix-vector products instead of a GEMM. Every K-split partial is
// such a product (of the blocks the tile names), so partials are checked
// the same way. Pure: plain arrays in, a verdict out.
//
// The probes. Each r_j = s_j·(1 + U_j), s_j a random sign and U_j uniform
// in [0, 1), and two independent r are used (freivalds_probes); a row must
// pass both. Signs alone (r_j = ±1) would let a change that moves several
// elements of a row by the same amount cancel exactly with probability
// C(n, n/2)/2^n (12% for n = 42): seen in practice with a lying device.
//
// The tolerance. An honest device computes each c_ij = Σ_k a_ik b_kj in
// float32 with round-to-nearest, in any summation order, with or without
// FMA. Its error is a sum of at most 2K-1 rounding terms (K products, K-1
// additions), each δ·s with |δ| ≤ u = 2^-24 and s a product or a partial
// sum, so |s| ≤ Σ_k |a_ik b_kj| ≤ ‖a_i‖ ‖b_j‖ (Cauchy-Schwarz; to first
// order in u: the factor (1 + 2Ku) below covers the rest). The check's
// difference for row i is d_i = Σ_j r_j (c_ij - (AB)_ij), a sum of at most
// (2K-1)·n such terms, the one for column j scaled by |r_j|. Under the
// standard probabilistic model of rounding (Higham & Mary, SIAM J. Sci.
// Comput. 41(5), 2019: the δ are mean-zero and independent), d_i is a
// martingale with bounded differences, and Azuma-Hoeffding gives
//
//   P(|d_i| ≥ λ·σ_i) ≤ 2·exp(-λ²/2),
//   σ_i = u·(1 + 2Ku)·sqrt(2K-1)·‖a_i‖·‖B‖_r,   ‖B‖_r² = Σ_j r_j²·‖b_j‖².
//
// λ = 8 makes that 2.5e-14 per row and probe. The bound on |s| is loose
// by about sqrt(K) for data with mixed signs, so honest tiles sit far
// below it. The check's own arithmetic is in double; its error, at most
// (K + n)·2^-53 times the same magnitudes, is added.
//
// What it catches: a corrupted row i (a change e_i to the row) moves d_i
// by Σ_j r_j e_ij. A change to one element is seen at least whole
// (|r_j| ≥ 1), so it is refused whenever it exceeds the tolerance by more
// than the honest tile's own rounding. For changes to several elements,
// the largest one's term has a density of at most 1/(2|e_max|) given the
// rest, so a probe misses the row with probability at most τ/|e_max| (τ
// the tolerance), and both probes with at most (τ/|e_max|)²: 1e-4 for a
// change 100 times the tolerance, per corrupted row. A change below the
// tolerance is also below what one float GEMM can promise at these bounds.
//
// Tiles that share a block of op(A) (a row of the grid) can be checked
// together: Σ_t C_t·r_t against op(A)·Σ_t op(B_t)·r_t, which reads the
// block of A once instead of once per tile. The bound is the same sum of
// rounding terms, over Σ_t n_t columns and Σ_t ‖op(B_t)‖_r². A refusal
// then names a row of the group; checking its tiles one by one finds the
// wrong one.
//
// Elementwise (for results computed twice, --replicate): each element of an
// honest result lies within λ·u·(1+2Ku)·sqrt(2K-1)·‖a_i‖·‖b_j‖ of the exact
// product by the same argument (with r = e_j), so two honest results
// differ by at most twice that.
//
// bf16 on the wire (--wire=bf16, schema/wire_precision.hpp). The operands:
// the PS rounds each block to bf16 before it is hashed and sent, and checks
// against those rounded blocks, the operands the device was given; their
// rounding is not the device's error, and the fp32 bound above applies
// unchanged to the product of the rounded operands (the norms are theirs).
// The result: an honest device rounds its float32 ĉ_ij to the bf16 c̃_ij it
// sends, adding e_ij = c̃_ij - ĉ_ij with |e_ij| ≤ h_ij, half an ulp of c̃_ij
// (bf16_half_ulp: 2^(e-135) for its exponent field e ≥ 1, 2^-134 among
// subnormals; at most u_b·|c̃_ij|, u_b = 2^-8; also the bound just below a
// power of two, whose lower binade's ulp is half as large). The check's
// difference gains Σ_j r_j·e_ij. The e_ij are fixed before the device could
// know anything of r (secret, drawn at the PS), so this is a sum of
// independent, mean-zero terms (r_j's sign is a fair coin) in
// [-2h_ij, 2h_ij], and Hoeffding's inequality gives, rigorously and without
// the model of rounding the fp32 part needs,
//
//   P(|Σ_j r_j e_ij| ≥ λ·σb_i) ≤ 2·exp(-λ²/2),   σb_i = 2·sqrt(Σ_j h_ij²),
//
// the same 2.5e-14 at λ = 8. A bf16 row's tolerance is the fp32 one plus
// λ·σb_i (a union bound over the two parts: twice the false-refusal rate).
// Tiles checked together sum Σ h² over all their columns. The h_ij come from
// the returned values, which a liar chooses; moving one element by Δ raises
// λ·σb_i by at most 2λ·u_b·(|c̃_ij| + |Δ|) = (|c̃_ij| + |Δ|)/16 while moving
// d_i by |r_j|·Δ ≥ Δ, so the change is still seen, only later. What it costs
// is resolution: σb_i ≈ 2·2^-8.5·‖c_i‖, so a single element is caught only
// once it moves by a good part of λ·σb_i, about 0.044·‖c_i‖₂ (a few tenths
// of the row's largest element at n = 128 to 512; tests/verify_bf16_test.cpp
// measures it). Two honest bf16 results of one element (--replicate) differ
// by at most the fp32 allowance plus h of each.
//
// bf16 operands, fp32 results (--wire=bf16-operands): the operands are
// rounded and checked as sent, as with bf16, and the result is the device's
// float32 ĉ unrounded, so the fp32 bound above applies as it stands to the
// rounded operands' product, with no rounding term (row_sums and check
// take the result's precision, fp32): a single element is caught from the
// same 0.003 to 0.006 of its row's largest |c| as with fp32 operands.

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "schema/wire_precision.hpp"

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

inline constexpr int freivalds_probes = 2;
// One pointer per probe to the probe's values over some columns.
using probe_window = std::array<const double*, freivalds_probes>;

// What --replicate's element comparison needs of op(A)'s block: its rows' norms.
struct a_digest {
  std::vector<double> row_norms;
  bool finite = true;
};

// What the check needs of op(B)'s block and the probes' windows over its
// columns, computed once per block: op(B)·r per probe, its columns' norms
// and ‖op(B)‖_r² per probe.
struct b_digest {
  std::array<std::vector<double>, freivalds_probes> b_r;
  std::vector<double> col_norms;
  std::array<double, freivalds_probes> weighted2{};
  bool finite = true;
};

// into[v] += bd.b_r[v] for each probe v (over the shorter of the two):
// Σ_t op(B_t)·r_t, one tile's B at a time.
void add_b_r(std::array<std::vector<double>, freivalds_probes>& into, const b_digest& bd);

// What a set of tiles sharing op(A)'s block brought so far: per probe and
// row of the block, Σ_t (C_t·r_t); per row, Σ_t Σ_j |c_ij|; per probe,
// Σ_t op(B_t)·r_t and Σ_t ‖op(B_t)‖_r²; and Σ_t n_t.
// With results in bf16 (`results`), also per row Σ_t Σ_j h_ij², the half
// ulps of the returned values (the rounding the header derives).
struct row_sums {
  std::array<std::vector<double>, freivalds_probes> c_r, b_r;
  std::vector<double> magnitude;
  std::array<double, freivalds_probes> weighted2{};
  int64_t columns = 0;
  bool finite = true;  // the B blocks' digests were finite
  wire_precision results = wire_precision::fp32;
  std::vector<double> half_ulps2;  // bf16 results only

  row_sums(int64_t rows, int64_t k, wire_precision results = wire_precision::fp32);
  // Adds tile C (rows x cols, row stride `ld`, 0: packed) with the probes'
  // window `r` and its B block's digest. False, adding nothing, when C holds
  // NaN or infinity (seen in the same pass: Σ|c| is then not finite). With
  // `copy_to`, C is also copied there (row stride copy_ld) in the same pass,
  // whatever the verdict.
  bool add(const float* c, int64_t cols, const probe_window& r, const b_digest& bd,
           int64_t ld = 0, float* copy_to = nullptr, int64_t copy_ld = 0);
};

// What the check of a set of tiles sharing op(A)'s block needs of the block
// itself, given y = Σ_t op(B_t)·r_t (per probe): op(A)·y and the norms of
// op(A)'s rows. It depends on no result, so it can be computed while the
// tiles are still being worked on.
struct a_expectation {
  std::array<std::vector<double>, freivalds_probes> expected;
  std::vector<double> norms;
};

struct verdict {
  bool checked = false;  // false: the operands are not finite, nothing could be judged
  bool passed = true;
  int64_t worst_row = -1;   // the row furthest past (or nearest to) its tolerance
  double worst_ratio = 0;   // |d_i| / tolerance_i there (worst probe): above 1 is a refusal
};

class freivalds {
 public:
  static constexpr double default_lambda = 8;
  explicit freivalds(double lambda = default_lambda) : lambda_(lambda) {}

  // Fresh secret probes over n columns: probe v's values at [v·n, (v+1)·n).
  static std::vector<double> draw_probes(int64_t n, std::mt19937_64& rng);
  // The probes' window from column n0 of a draw over n columns.
  static probe_window window(const std::vector<double>& probes, int64_t n, int64_t n0);

  static a_digest digest_a(const stored_block& a);
  // `r`: the probes over op_cols() columns, the block's.
  static b_digest digest_b(const stored_block& b, const probe_window& r);

  // The tile C (rows x cols, row-major, row stride `ld`, 0: packed) against
  // op(A)·op(B), with `r` the same window digest_b saw; `results`: the
  // precision C came back in.
  verdict check(const float* c, int64_t rows, int64_t cols, const stored_block& a,
                const b_digest& bd, const probe_window& r, int64_t ld = 0,
                wire_precision results = wire_precision::fp32) const;
  // Tiles sharing op(A)'s block `a`, summed: one pass over the block.
  verdict check(const stored_block& a, const row_sums& sums) const;
  // op(A)·y and op(A)'s row norms, in one pass over the block.
  static a_expectation expect(const stored_block& a, const probe_window& y);
  // The same test with op(A)'s part computed beforehand (by expect, with y
  // the b_r `sums` holds, up to the order of its additions), k = op(A)'s columns.
  verdict check(const a_expectation& e, int64_t k, const row_sums& sums) const;

  // |d_i| allowed for a row with norm `row_norm`, inner dimension k, n
  // columns and ‖op(B)‖_r = `weighted`: the rounding bound alone.
  double row_tolerance(int64_t k, double row_norm, double weighted) const;
  // What the check allows: row_tolerance plus its double dots' own error,
  // which grows with the row's Σ_j |c_ij| (`magnitude`) and n.
  double check_tolerance(int64_t k, int64_t n, double row_norm, double weighted,
                         double magnitude) const;
  // What a row's bf16 results add to its tolerance, given Σ_j h_ij²: λ·σb.
  double rounding_tolerance(double half_ulps2) const;
  // |c1_ij - c2_ij| allowed between two honest results of the element.
  double element_tolerance(int64_t k, double row_norm, double col_norm) const;

  // Two results of the same tile (rows x cols, packed): the first element
  // further apart than element_tolerance (plus both half ulps for bf16
  // results), or -1 when they agree.
  int64_t first_disagreement(const float* c1, const float* c2, int64_t rows, int64_t cols,
                             int64_t k, const a_digest& ad, const b_digest& bd,
                             wire_precision results = wire_precision::fp32) const;

  double lambda() const { return lambda_; }

 private:
  double lambda_;
};

}  // namespace cleave
