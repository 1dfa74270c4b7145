// kernels/attention_tile.hpp: a tile of (sample, head) pairs computed whole,
// against finite differences and against the PS's own attention.

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "kernels/attention_tile.hpp"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "tests/gradcheck.hpp"

namespace cleave {
namespace {

using namespace gradcheck;

template <class T>
void tile_forward(const basic_tensor<T>& qkv, const attention_tile_shape& s, int64_t p0, int64_t p1,
                  basic_tensor<T>& out, std::vector<T>& lse) {
  out.resize(s.batch * s.seq, s.d);
  lse.resize(static_cast<size_t>(s.pairs() * s.seq));
  attention_tile_forward<T>(qkv.data(), s, p0, p1, out.data(), lse.data() + p0 * s.seq);
}

TEST(AttentionTile, GradcheckAndTheNaiveForward) {
  const attention_tile_shape s{2, 5, 2, 8};
  dt qkv = rand_t(s.batch * s.seq, 3 * s.d, 33, -1.5, 1.5), R = rand_t(s.batch * s.seq, s.d, 34);
  dt out;
  std::vector<double> lse;
  auto loss = [&] {
    tile_forward(qkv, s, 0, s.pairs(), out, lse);
    return dot(out, R);
  };
  loss();
  EXPECT_LT(rel_err(out, attention_ref(qkv, s.batch, s.seq, s.heads)), 1e-14);
  dt dqkv(s.batch * s.seq, 3 * s.d);
  attention_tile_backward<double>(qkv.data(), out.data(), lse.data(), R.data(), s, 0, s.pairs(),
                                  dqkv.data());
  EXPECT_LT(rel_err(dqkv, numeric_grad(qkv, loss)), kTight);
}

// Tiles of any run of pairs fill exactly their pairs' rows and columns, with
// the same bits as one tile of every pair.
TEST(AttentionTile, TilesOfPairsAddUpToTheWholeLayer) {
  const attention_tile_shape s{3, 9, 4, 32};
  ft qkv = to_float(rand_t(s.batch * s.seq, 3 * s.d, 35)), dout = to_float(rand_t(s.batch * s.seq, s.d, 36));
  ft whole, parts;
  std::vector<float> lse_whole, lse_parts;
  tile_forward(qkv, s, 0, s.pairs(), whole, lse_whole);
  parts.resize(whole.rows(), whole.cols());
  lse_parts.resize(lse_whole.size());
  for (auto [p0, p1] : {std::pair<int64_t, int64_t>{0, 5}, {5, 6}, {6, 12}})
    attention_tile_forward<float>(qkv.data(), s, p0, p1, parts.data(), lse_parts.data() + p0 * s.seq);
  EXPECT_EQ(whole.storage(), parts.storage());
  EXPECT_EQ(lse_whole, lse_parts);
  ft g_whole(qkv.rows(), qkv.cols()), g_parts(qkv.rows(), qkv.cols());
  attention_tile_backward<float>(qkv.data(), whole.data(), lse_whole.data(), dout.data(), s, 0,
                                 s.pairs(), g_whole.data());
  for (auto [p0, p1] : {std::pair<int64_t, int64_t>{0, 7}, {7, 12}})
    attention_tile_backward<float>(qkv.data(), whole.data(), lse_whole.data() + p0 * s.seq,
                                   dout.data(), s, p0, p1, g_parts.data());
  EXPECT_EQ(g_whole.storage(), g_parts.storage());
}

// In float, equal to the PS's per-head attention (attention.cpp, four
// products per pair and a stored softmax) within 1e-6 of the largest value.
TEST(AttentionTile, FloatEqualsThePsAttentionWithinOneInAMillion) {
  const attention_tile_shape s{2, 64, 4, 128};
  ft qkv = to_float(rand_t(s.batch * s.seq, 3 * s.d, 37, -2.0, 2.0));
  ft dout = to_float(rand_t(s.batch * s.seq, s.d, 38));
  ft ps_out, probs, ps_grad;
  attention_forward<float>(default_gemm_engine<float>(), 0, qkv, s.batch, s.seq, s.heads, ps_out, probs);
  attention_backward<float>(default_gemm_engine<float>(), 0, qkv, probs, dout, s.batch, s.seq, s.heads, ps_grad);
  ft out;
  std::vector<float> lse;
  tile_forward(qkv, s, 0, s.pairs(), out, lse);
  ft grad(qkv.rows(), qkv.cols());
  attention_tile_backward<float>(qkv.data(), out.data(), lse.data(), dout.data(), s, 0, s.pairs(), grad.data());
  EXPECT_LT(rel_err(out, to_double(ps_out)), 1e-6);
  EXPECT_LT(rel_err(grad, to_double(ps_grad)), 1e-6);
}

}  // namespace
}  // namespace cleave
