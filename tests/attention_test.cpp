// Attention as the model runs it on the PS (kernels/ops.hpp): against
// finite differences, the causal mask, the engine roles its products take,
// when heads run in parallel, and float against double.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "kernels/tensor.hpp"
#include "tests/gradcheck.hpp"

namespace cleave {
namespace {

using namespace gradcheck;

TEST(Attention, Gradcheck) {
  const int64_t B = 2, S = 5, H = 2, D = 8;
  auto& eng = default_gemm_engine<double>();
  dt qkv = rand_t(B * S, 3 * D, 31, -1.5, 1.5), R = rand_t(B * S, D, 32);
  dt out, probs;
  auto loss = [&] {
    attention_forward<double>(eng, 0, qkv, B, S, H, out, probs);
    return dot(out, R);
  };
  loss();
  EXPECT_LT(rel_err(out, attention_ref(qkv, B, S, H)), 1e-14);
  // probs rows sum to 1, future entries are exactly 0.
  for (int64_t r = 0; r < B * H * S; ++r) {
    const int64_t i = r % S;
    double s = 0;
    for (int64_t j = 0; j < S; ++j) {
      s += probs.at(r, j);
      if (j > i) {
        EXPECT_EQ(probs.at(r, j), 0.0);
      }
    }
    EXPECT_NEAR(s, 1.0, 1e-14);
  }
  dt dqkv;
  attention_backward<double>(eng, 0, qkv, probs, R, B, S, H, dqkv);
  const dt n = numeric_grad(qkv, loss);
  EXPECT_LT(rel_err(dqkv, n), kTight);
  // Each of Q, K and V gets a non-trivial gradient.
  for (int part = 0; part < 3; ++part) {
    double m = 0;
    for (int64_t r = 0; r < B * S; ++r)
      for (int64_t c = part * D; c < (part + 1) * D; ++c) m = std::max(m, std::abs(n.at(r, c)));
    EXPECT_GT(m, 1e-3) << "part " << part;
  }
}

TEST(Attention, CausalMask) {
  const int64_t B = 2, S = 6, H = 2, D = 8;
  auto& eng = default_gemm_engine<double>();
  dt qkv = rand_t(B * S, 3 * D, 41), out1, out2, probs;
  attention_forward<double>(eng, 0, qkv, B, S, H, out1, probs);
  const int64_t t = 3;  // change K and V of token t of sample 1
  dt qkv2 = qkv;
  for (int64_t c = D; c < 3 * D; ++c) qkv2.at(1 * S + t, c) += 0.7;
  attention_forward<double>(eng, 0, qkv2, B, S, H, out2, probs);
  for (int64_t r = 0; r < B * S; ++r) {
    const bool affected = r / S == 1 && r % S >= t;
    double diff = 0;
    for (int64_t c = 0; c < D; ++c) diff = std::max(diff, std::abs(out1.at(r, c) - out2.at(r, c)));
    if (affected) {
      EXPECT_GT(diff, 1e-6) << "row " << r;
    } else {
      EXPECT_EQ(diff, 0.0) << "row " << r;
    }
  }
}

TEST(Attention, EngineRolesAndSerialPathMatch) {
  const int64_t B = 2, S = 7, H = 3, D = 12;
  dt qkv = rand_t(B * S, 3 * D, 51), dout = rand_t(B * S, D, 52);
  recording_engine<double> rec;
  dt o1, p1, g1, o2, p2, g2;
  attention_forward<double>(rec, 9, qkv, B, S, H, o1, p1);
  ASSERT_EQ(rec.tags.size(), size_t(2 * B * H));
  for (size_t i = 0; i < rec.tags.size(); ++i) {
    EXPECT_EQ(rec.tags[i].layer, 9u);
    EXPECT_EQ(rec.tags[i].role, i % 2 == 0 ? gemm_role::attn_scores : gemm_role::attn_values);
  }
  rec.tags.clear();
  attention_backward<double>(rec, 9, qkv, p1, dout, B, S, H, g1);
  ASSERT_EQ(rec.tags.size(), size_t(4 * B * H));
  for (auto& t : rec.tags) EXPECT_EQ(t.role, gemm_role::attn_grad);
  // The local engine may take the parallel-over-heads path; same answer.
  const int saved = compute_threads();
  set_compute_threads(2);
  auto& eng = default_gemm_engine<double>();
  attention_forward<double>(eng, 9, qkv, B, S, H, o2, p2);
  attention_backward<double>(eng, 9, qkv, p2, dout, B, S, H, g2);
  set_compute_threads(saved);
  EXPECT_LT(rel_err(o2, o1), 1e-14);
  EXPECT_LT(rel_err(p2, p1), 1e-14);
  EXPECT_LT(rel_err(g2, g1), 1e-14);
}

// An engine that computes attention's products here gets none of them
// through gemm: the heads run in parallel and it is handed their time. One
// that keeps any of them gets them all, in order. Both give the same answer.
TEST(Attention, ParallelHeadsOnlyWhenEveryProductStaysHere) {
  const int64_t B = 2, S = 7, H = 3, D = 12, dh = D / H;
  dt qkv = rand_t(B * S, 3 * D, 61), dout = rand_t(B * S, D, 62);
  const int saved = compute_threads();
  set_compute_threads(2);
  recording_engine<double> here;
  here.here = [](gemm_tag, int64_t, int64_t, int64_t) { return true; };
  dt o1, p1, g1;
  attention_forward<double>(here, 4, qkv, B, S, H, o1, p1);
  attention_backward<double>(here, 4, qkv, p1, dout, B, S, H, g1);
  EXPECT_TRUE(here.tags.empty());
  EXPECT_EQ(here.local_products, 6 * B * H);
  EXPECT_GT(here.local_seconds, 0.0);
  const std::vector<std::array<int64_t, 4>> shapes = {
    {3, S, S, dh}, {4, S, dh, S}, {5, S, dh, S}, {5, S, S, dh}};
  EXPECT_EQ(here.asked, shapes);

  recording_engine<double> mixed;  // keeps the score products
  mixed.here = [](gemm_tag tag, int64_t, int64_t, int64_t) {
    return tag.role != gemm_role::attn_scores;
  };
  dt o2, p2, g2;
  attention_forward<double>(mixed, 4, qkv, B, S, H, o2, p2);
  attention_backward<double>(mixed, 4, qkv, p2, dout, B, S, H, g2);
  set_compute_threads(saved);
  EXPECT_EQ(mixed.tags.size(), size_t(2 * B * H));  // the forward's, in order; backward parallel
  EXPECT_EQ(mixed.local_products, 4 * B * H);
  EXPECT_EQ(rel_err(o2, o1), 0.0);
  EXPECT_EQ(rel_err(p2, p1), 0.0);
  EXPECT_EQ(rel_err(g2, g1), 0.0);
}

TEST(Attention, FloatMatchesDouble) {
  const int64_t B = 2, S = 33, H = 4, D = 64;
  dt qkv = rand_t(B * S, 3 * D, 61, -2.0, 2.0), dout = rand_t(B * S, D, 62);
  ft qkvf = to_float(qkv), doutf = to_float(dout);
  dt o, p, g;
  ft of, pf, gf;
  attention_forward<double>(default_gemm_engine<double>(), 0, qkv, B, S, H, o, p);
  attention_forward<float>(default_gemm_engine<float>(), 0, qkvf, B, S, H, of, pf);
  attention_backward<double>(default_gemm_engine<double>(), 0, qkv, p, dout, B, S, H, g);
  attention_backward<float>(default_gemm_engine<float>(), 0, qkvf, pf, doutf, B, S, H, gf);
  EXPECT_LT(rel_err(of, o), kFloat);
  EXPECT_LT(rel_err(pf, p), kFloat);
  EXPECT_LT(rel_err(gf, g), kFloat);
}

}  // namespace
}  // namespace cleave
