#include "kernels/attention_tile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/reproducible.hpp"

namespace cleave {

namespace {

// Where one pair's Q, K, V (and their gradients) and output rows live.
struct pair_place {
  int64_t row0;  // first row of the sample in qkv, out
  int64_t q, k, v, o;  // first columns
};

pair_place place_of(const attention_tile_shape& s, int64_t pair) {
  const int64_t b = pair / s.heads, h = pair % s.heads, dh = s.dh();
  return {b * s.seq, h * dh, s.d + h * dh, 2 * s.d + h * dh, h * dh};
}

}  // namespace

template <class T>
void attention_tile_forward(const T* qkv, const attention_tile_shape& s, int64_t pair0,
                            int64_t pair1, T* out, T* lse) {
  const int64_t seq = s.seq, dh = s.dh(), ld = 3 * s.d;
  const T scale = T(1) / std::sqrt(T(dh));
  std::vector<T> scores(static_cast<size_t>(seq * seq));
  for (int64_t pair = pair0; pair < pair1; ++pair) {
    const pair_place at = place_of(s, pair);
    const T* rows = qkv + at.row0 * ld;
    const const_view<T> q{rows + at.q, seq, dh, ld}, k{rows + at.k, seq, dh, ld},
      v{rows + at.v, seq, dh, ld};
    gemm_local<T>(q, false, k, true, {scores.data(), seq, seq, seq}, T(0));
    T* pair_lse = lse + (pair - pair0) * seq;
    for (int64_t i = 0; i < seq; ++i) {
      T* row = scores.data() + i * seq;
      const int64_t live = i + 1;
      const T mx = *std::max_element(row, row + live);
      const T sum = detail::exp_sum(row, row, live, mx, scale);
      const T inv = T(1) / sum;
      for (int64_t j = 0; j < live; ++j) row[j] *= inv;
      std::fill(row + live, row + seq, T(0));
      pair_lse[i] = mx * scale + std::log(sum);
    }
    gemm_local<T>({scores.data(), seq, seq, seq}, false, v, false,
                  {out + at.row0 * s.d + at.o, seq, dh, s.d}, T(0));
  }
}

template <class T>
void attention_tile_backward(const T* qkv, const T* out, const T* lse, const T* dout,
                             const attention_tile_shape& s, int64_t pair0, int64_t pair1,
                             T* dqkv) {
  const int64_t seq = s.seq, dh = s.dh(), ld = 3 * s.d;
  const T scale = T(1) / std::sqrt(T(dh));
  std::vector<T> p(static_cast<size_t>(seq * seq)), dp(p.size());
  for (int64_t pair = pair0; pair < pair1; ++pair) {
    const pair_place at = place_of(s, pair);
    const T* rows = qkv + at.row0 * ld;
    const const_view<T> q{rows + at.q, seq, dh, ld}, k{rows + at.k, seq, dh, ld},
      v{rows + at.v, seq, dh, ld};
    const const_view<T> o{out + at.row0 * s.d + at.o, seq, dh, s.d};
    const const_view<T> g{dout + at.row0 * s.d + at.o, seq, dh, s.d};
    T* grad_rows = dqkv + at.row0 * ld;
    // P recomputed from the scores and the forward's lse: exp(s·scale - lse).
    gemm_local<T>(q, false, k, true, {p.data(), seq, seq, seq}, T(0));
    const T* pair_lse = lse + (pair - pair0) * seq;
    for (int64_t i = 0; i < seq; ++i) {
      T* row = p.data() + i * seq;
      const int64_t live = i + 1;
      for (int64_t j = 0; j < live; ++j) row[j] = std::exp(row[j] * scale - pair_lse[i]);
      std::fill(row + live, row + seq, T(0));
    }
    // dV = P^T dO; dP = dO V^T.
    gemm_local<T>({p.data(), seq, seq, seq}, true, g, false, {grad_rows + at.v, seq, dh, ld}, T(0));
    gemm_local<T>(g, false, v, true, {dp.data(), seq, seq, seq}, T(0));
    // dS = P ∘ (dP - rowsum(dO ∘ O)) · scale: rowsum(dO ∘ O) = rowsum(dP ∘ P).
    for (int64_t i = 0; i < seq; ++i) {
      const T* pr = p.data() + i * seq;
      T* gr = dp.data() + i * seq;
      const int64_t live = i + 1;
      const T* orow = o.data + i * o.ld;
      const T* grow = g.data + i * g.ld;
      const T dot = detail::lane_sum<T>(dh, [&](int64_t c) { return orow[c] * grow[c]; });
      for (int64_t j = 0; j < live; ++j) gr[j] = pr[j] * (gr[j] - dot) * scale;
      std::fill(gr + live, gr + seq, T(0));
    }
    // dQ = dS K; dK = dS^T Q.
    gemm_local<T>({dp.data(), seq, seq, seq}, false, k, false, {grad_rows + at.q, seq, dh, ld}, T(0));
    gemm_local<T>({dp.data(), seq, seq, seq}, true, q, false, {grad_rows + at.k, seq, dh, ld}, T(0));
  }
}

template void attention_tile_forward<float>(const float*, const attention_tile_shape&, int64_t,
                                            int64_t, float*, float*);
template void attention_tile_forward<double>(const double*, const attention_tile_shape&, int64_t,
                                             int64_t, double*, double*);
template void attention_tile_backward<float>(const float*, const float*, const float*,
                                             const float*, const attention_tile_shape&, int64_t,
                                             int64_t, float*);
template void attention_tile_backward<double>(const double*, const double*, const double*,
                                              const double*, const attention_tile_shape&,
                                              int64_t, int64_t, double*);

}  // namespace cleave
