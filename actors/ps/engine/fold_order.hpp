#pragma once
// The order in which a GEMM's tile results are added into C. Results are
// folded as they arrive, while devices still work, but each block of C takes
// its K-split partial sums in tile order, so C has the same bits whatever
// order the devices answer in. Pure: no actor, no clock.
//
// The tiles' blocks of C must be equal or disjoint and cover C (a grid, as
// the planner cuts); otherwise every tile waits for the one before it and C
// is zeroed first, which is still deterministic.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/tensor.hpp"

namespace cleave {

// A tile's block of C: rows [m0, m1), columns [n0, n1).
struct c_block {
  int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0;
};

class fold_order {
 public:
  // The blocks of a call's tiles, in tile order, into an c_rows x c_cols C
  // computed as op(A) op(B) + beta C.
  fold_order(const std::vector<c_block>& blocks, int64_t c_rows, int64_t c_cols, float beta);

  // What C needs before the first fold: zeroing (beta 0, not a grid), scaling
  // by beta (beta not 0 or 1), or nothing (the first tile on each block is
  // copied in when beta is 0).
  void prepare(mut_view<float> c) const;

  // Tile i's result is in: the tiles that may be folded now, in order (i
  // and the tiles after it on its block whose results were already in), each
  // marked folded. Empty while an earlier tile on its block is missing.
  std::vector<size_t> ready(size_t i);

  // Whether tile i's result is copied into C rather than added.
  bool copies(size_t i) const { return links_[i].copies; }
  bool folded(size_t i) const { return links_[i].folded; }
  bool grid() const { return grid_; }

 private:
  struct link {
    int32_t after = -1;  // the tile before it on its block of C, or -1
    int32_t then = -1;   // the tile after it, or -1
    bool copies = false;
    bool in = false;
    bool folded = false;
  };
  std::vector<link> links_;
  bool grid_ = false;
  float beta_ = 0;
};

// Adds (or copies) a tile's row-major result into its block of C.
void fold_tile(mut_view<float> c, const c_block& block, const float* result, bool copies);

}  // namespace cleave
