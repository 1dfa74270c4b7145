// Kernel correctness for the GEMM, linear layers, activations, cross-entropy
// and AdamW: analytic gradients against central finite differences in double
// precision, forwards against naive reference loops, float against double,
// AdamW against a hand computation, and run-to-run bit-identity with 2
// threads. Attention and layer norm with the embedding have files of their
// own (attention_test.cpp, norm_embedding_test.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "kernels/tensor.hpp"
#include "tests/gradcheck.hpp"

namespace cleave {
namespace {

using namespace gradcheck;

// ---------------------------------------------------------------- GEMM ----

template <class T>
void naive_gemm(const_view<T> a, bool ta, const_view<T> b, bool tb, std::vector<double>& c,
                int64_t m, int64_t n, double beta) {
  const int64_t k = ta ? a.rows : a.cols;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a.data[p * a.ld + i] : a.data[i * a.ld + p];
        const double bv = tb ? b.data[j * b.ld + p] : b.data[p * b.ld + j];
        s += av * bv;
      }
      c[i * n + j] = s + (beta == 0 ? 0.0 : beta * c[i * n + j]);
    }
}

template <class T>
void check_gemm_all(int64_t m, int64_t n, int64_t k, int64_t pad, double tol) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (double beta : {0.0, 1.0, 0.5}) {
        // Storage with extra columns so that ld > cols (pad > 0).
        const int64_t ar = ta ? k : m, ac = ta ? m : k;
        const int64_t br = tb ? n : k, bc = tb ? k : n;
        basic_tensor<T> as(ar, ac + pad), bs(br, bc + pad), cs(m, n + pad);
        dt ad = rand_t(ar, ac + pad, 11 + ta), bd = rand_t(br, bc + pad, 21 + tb),
           cd = rand_t(m, n + pad, 31);
        for (int64_t i = 0; i < as.size(); ++i) as[i] = T(ad[i]);
        for (int64_t i = 0; i < bs.size(); ++i) bs[i] = T(bd[i]);
        for (int64_t i = 0; i < cs.size(); ++i) cs[i] = T(cd[i]);
        if (beta == 0)  // beta == 0 must overwrite, never multiply, what is in C
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
              cs.at(i, pad + j) = std::numeric_limits<T>::quiet_NaN();
        const_view<T> a{as.data() + pad, ar, ac, ac + pad};
        const_view<T> b{bs.data() + pad, br, bc, bc + pad};
        mut_view<T> c{cs.data() + pad, m, n, n + pad};
        std::vector<double> ref(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) ref[i * n + j] = double(c.data[i * c.ld + j]);
        basic_tensor<T> before = cs;
        naive_gemm<T>(a, ta, b, tb, ref, m, n, beta);
        gemm_local<T>(a, ta != 0, b, tb != 0, c, T(beta));
        double md = 0, mr = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const double got = c.data[i * c.ld + j];
            md = std::max(md, std::isnan(got) ? 1e9 : std::abs(got - ref[i * n + j]));
            mr = std::max(mr, std::abs(ref[i * n + j]));
          }
        EXPECT_LT(md / std::max(1e-8, mr), tol)
            << "ta=" << ta << " tb=" << tb << " beta=" << beta << " m,n,k=" << m << "," << n
            << "," << k << " pad=" << pad;
        // The padding columns of C are untouched.
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < pad; ++j) EXPECT_EQ(cs.at(i, j), before.at(i, j));
      }
}

TEST(Gemm, AllTransposesAndBetasDouble) {
  check_gemm_all<double>(7, 5, 9, 0, 1e-13);
  check_gemm_all<double>(67, 45, 130, 0, 1e-13);  // large enough for Eigen's blocked kernel
}
TEST(Gemm, AllTransposesAndBetasFloat) {
  check_gemm_all<float>(7, 5, 9, 0, 1e-5);
  check_gemm_all<float>(67, 45, 130, 0, 1e-5);
}
TEST(Gemm, StridedViews) {
  check_gemm_all<double>(6, 4, 5, 3, 1e-13);
  check_gemm_all<double>(40, 33, 70, 7, 1e-13);
  check_gemm_all<float>(40, 33, 70, 7, 1e-5);
}
TEST(Gemm, ShapeMismatchThrows) {
  dt a(3, 4), b(5, 2), c(3, 2);
  EXPECT_THROW(gemm_local<double>(a.view(), false, b.view(), false, c.view(), 0.0),
               std::invalid_argument);
}
TEST(Gemm, DefaultEngineIsLocalAndStable) {
  auto& e1 = default_gemm_engine<double>();
  auto& e2 = default_gemm_engine<double>();
  EXPECT_EQ(&e1, &e2);
  EXPECT_NE(dynamic_cast<local_gemm_engine<double>*>(&e1), nullptr);
  dt a = rand_t(3, 4, 1), b = rand_t(4, 2, 2), c(3, 2), r(3, 2);
  e1.gemm({0, gemm_role::forward}, a.view(), false, b.view(), false, c.view(), 0.0);
  gemm_local<double>(a.view(), false, b.view(), false, r.view(), 0.0);
  EXPECT_EQ(rel_err(c, r), 0.0);
}

// -------------------------------------------------------------- linear ----

void linear_gradcheck(bool with_bias) {
  auto& eng = default_gemm_engine<double>();
  dt x = rand_t(7, 5, 1), w = rand_t(5, 4, 2), b = rand_t(1, 4, 3), R = rand_t(7, 4, 4);
  dt y;
  auto loss = [&] {
    linear_forward<double>(eng, 0, -1, x, w, with_bias ? &b : nullptr, y);
    return dot(y, R);
  };
  // Forward against a naive loop.
  loss();
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double s = with_bias ? b[j] : 0.0;
      for (int64_t p = 0; p < 5; ++p) s += x.at(i, p) * w.at(p, j);
      EXPECT_NEAR(y.at(i, j), s, 1e-13);
    }
  dt dx, dw, db;
  linear_backward<double>(eng, 0, -1, x, w, R, &dx, dw, with_bias ? &db : nullptr);
  const dt nx = numeric_grad(x, loss), nw = numeric_grad(w, loss);
  EXPECT_LT(rel_err(dx, nx), kTight);
  EXPECT_LT(rel_err(dw, nw), kTight);
  EXPECT_GT(max_abs(nx), 0.1);
  if (with_bias) {
    const dt nb = numeric_grad(b, loss);
    EXPECT_LT(rel_err(db, nb), kTight);
  }
  // Parameter gradients accumulate; the input gradient is overwritten.
  dt dw1 = dw, db1 = db;
  linear_backward<double>(eng, 0, -1, x, w, R, &dx, dw, with_bias ? &db : nullptr);
  EXPECT_LT(rel_err(dx, nx), kTight);
  for (int64_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw[i], 2 * dw1[i], 1e-12);
  if (with_bias) {
    for (int64_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db[i], 2 * db1[i], 1e-12);
  }
  // dx may be skipped.
  dt dw2;
  linear_backward<double>(eng, 0, -1, x, w, R, nullptr, dw2, nullptr);
  EXPECT_LT(rel_err(dw2, dw1), 1e-14);
}

TEST(Linear, GradcheckWithBias) { linear_gradcheck(true); }
TEST(Linear, GradcheckWithoutBias) { linear_gradcheck(false); }

TEST(Linear, UsesEngineWithRoles) {
  recording_engine<double> eng;
  dt x = rand_t(3, 4, 1), w = rand_t(4, 2, 2), b = rand_t(1, 2, 3), y, dx, dw, db;
  linear_forward<double>(eng, 7, -1, x, w, &b, y);
  linear_backward<double>(eng, 7, -1, x, w, y, &dx, dw, &db);
  ASSERT_EQ(eng.tags.size(), 3u);
  EXPECT_EQ(eng.tags[0].role, gemm_role::forward);
  EXPECT_EQ(eng.tags[1].role, gemm_role::grad_input);
  EXPECT_EQ(eng.tags[2].role, gemm_role::grad_weight);
  for (auto& t : eng.tags) EXPECT_EQ(t.layer, 7u);
}

TEST(Linear, FloatMatchesDouble) {
  auto& ed = default_gemm_engine<double>();
  auto& ef = default_gemm_engine<float>();
  dt x = rand_t(33, 40, 1), w = rand_t(40, 24, 2), b = rand_t(1, 24, 3), dy = rand_t(33, 24, 4);
  ft xf = to_float(x), wf = to_float(w), bf = to_float(b), dyf = to_float(dy);
  dt y, dx, dw, db;
  ft yf, dxf, dwf, dbf;
  linear_forward<double>(ed, 0, -1, x, w, &b, y);
  linear_forward<float>(ef, 0, -1, xf, wf, &bf, yf);
  linear_backward<double>(ed, 0, -1, x, w, dy, &dx, dw, &db);
  linear_backward<float>(ef, 0, -1, xf, wf, dyf, &dxf, dwf, &dbf);
  EXPECT_LT(rel_err(yf, y), kFloat);
  EXPECT_LT(rel_err(dxf, dx), kFloat);
  EXPECT_LT(rel_err(dwf, dw), kFloat);
  EXPECT_LT(rel_err(dbf, db), kFloat);
}

// --------------------------------------------------------- activations ----

TEST(Relu, Gradcheck) {
  dt x = rand_t(6, 7, 5), R = rand_t(6, 7, 6);
  for (int64_t i = 0; i < x.size(); ++i)  // keep away from the kink
    if (std::abs(x[i]) < 0.1) x[i] = x[i] < 0 ? -0.5 : 0.5;
  dt y, dx;
  auto loss = [&] {
    relu_forward<double>(x, y);
    return dot(y, R);
  };
  loss();
  for (int64_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0);
  relu_backward<double>(x, R, dx);
  EXPECT_LT(rel_err(dx, numeric_grad(x, loss)), kTight);
}

double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(Gelu, Gradcheck) {
  dt x = rand_t(9, 11, 7, -4.0, 4.0), R = rand_t(9, 11, 8);
  dt y, dx;
  auto loss = [&] {
    gelu_forward<double>(x, y);
    return dot(y, R);
  };
  loss();
  for (int64_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], gelu_ref(x[i]), 1e-14);
  gelu_backward<double>(x, R, dx);
  EXPECT_LT(rel_err(dx, numeric_grad(x, loss)), kTight);
}

TEST(Activations, FloatMatchesDouble) {
  // Long enough to take the parallel chunked path and the vectorised tanh.
  dt x = rand_t(37, 1001, 9, -6.0, 6.0), dy = rand_t(37, 1001, 10);
  ft xf = to_float(x), dyf = to_float(dy);
  dt y, dx;
  ft yf, dxf;
  gelu_forward<double>(x, y);
  gelu_forward<float>(xf, yf);
  gelu_backward<double>(x, dy, dx);
  gelu_backward<float>(xf, dyf, dxf);
  EXPECT_LT(rel_err(yf, y), kFloat);
  EXPECT_LT(rel_err(dxf, dx), kFloat);
  // Element-wise too, not just against the maximum.
  for (int64_t i = 0; i < x.size(); ++i) ASSERT_NEAR(yf[i], y[i], 2e-5 * (1 + std::abs(y[i])));
  relu_forward<double>(x, y);
  relu_forward<float>(xf, yf);
  relu_backward<double>(x, dy, dx);
  relu_backward<float>(xf, dyf, dxf);
  EXPECT_LT(rel_err(yf, y), kFloat);
  EXPECT_LT(rel_err(dxf, dx), kFloat);
}

TEST(AddInplace, AddsAndChecksShape) {
  dt y = rand_t(3, 4, 1), x = rand_t(3, 4, 2), y0 = y;
  add_inplace<double>(y, x);
  for (int64_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], y0[i] + x[i]);
  dt bad(4, 3);
  EXPECT_THROW(add_inplace<double>(y, bad), std::invalid_argument);
}

// -------------------------------------------------------- cross-entropy ----

TEST(SoftmaxXent, GradcheckAndValue) {
  dt logits = rand_t(6, 9, 71, -3.0, 3.0);
  const std::vector<int32_t> labels = {0, 8, 3, 3, 5, 1};
  dt probs;
  auto loss = [&] { return softmax_xent_forward<double>(logits, labels, probs); };
  double ref = 0;
  for (int64_t r = 0; r < 6; ++r) {
    double z = 0;
    for (int64_t c = 0; c < 9; ++c) z += std::exp(logits.at(r, c));
    ref += -std::log(std::exp(logits.at(r, labels[r])) / z) / 6;
  }
  EXPECT_NEAR(loss(), ref, 1e-13);
  dt dl;
  softmax_xent_backward<double>(probs, labels, dl);
  EXPECT_LT(rel_err(dl, numeric_grad(logits, loss)), kTight);
}

TEST(SoftmaxXent, StableForHugeLogits) {
  dt logits(2, 3);
  logits.at(0, 0) = 1000;
  logits.at(0, 1) = 0;
  logits.at(0, 2) = -1000;
  logits.at(1, 0) = -1e4;
  logits.at(1, 1) = -1e4;
  logits.at(1, 2) = -1e4;
  dt probs;
  const double l = softmax_xent_forward<double>(logits, {1, 2}, probs);
  EXPECT_TRUE(std::isfinite(l));
  EXPECT_NEAR(l, (1000.0 + std::log(3.0)) / 2, 1e-9);
  ft lf = to_float(logits), pf;
  EXPECT_NEAR(softmax_xent_forward<float>(lf, {1, 2}, pf), l, 1e-3);
}

TEST(SoftmaxXent, LabelOutOfRangeThrows) {
  dt logits = rand_t(2, 4, 1), probs, dl;
  EXPECT_THROW(softmax_xent_forward<double>(logits, {0, 4}, probs), std::out_of_range);
  EXPECT_THROW(softmax_xent_forward<double>(logits, {-1, 0}, probs), std::out_of_range);
  softmax_xent_forward<double>(logits, {0, 3}, probs);
  EXPECT_THROW(softmax_xent_backward<double>(probs, {0, 7}, dl), std::out_of_range);
}

TEST(SoftmaxXent, FloatMatchesDouble) {
  dt logits = rand_t(40, 1000, 81, -5.0, 5.0);
  std::vector<int32_t> labels(40);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i * 23 % 1000);
  ft lf = to_float(logits);
  dt p, g;
  ft pf, gf;
  const double l = softmax_xent_forward<double>(logits, labels, p);
  const double lf_ = softmax_xent_forward<float>(lf, labels, pf);
  EXPECT_NEAR(lf_, l, kFloat * std::abs(l));
  softmax_xent_backward<double>(p, labels, g);
  softmax_xent_backward<float>(pf, labels, gf);
  EXPECT_LT(rel_err(pf, p), kFloat);
  EXPECT_LT(rel_err(gf, g), kFloat);
}

// --------------------------------------------------------------- AdamW ----

TEST(AdamW, ThreeStepsAgainstHandReference) {
  adamw_config cfg;
  cfg.lr = 0.1;
  cfg.beta1 = 0.9;
  cfg.beta2 = 0.99;
  cfg.eps = 1e-8;
  cfg.weight_decay = 0.1;
  const double gs[3] = {0.5, -1.5, 2.0};
  const double scale = 0.8;
  for (bool decay : {true, false}) {
    dt w(1, 2), g(1, 2), m, v;
    w[0] = 1.0;
    w[1] = -2.0;
    double rw[2] = {1.0, -2.0}, rm[2] = {0, 0}, rv[2] = {0, 0};
    for (int t = 1; t <= 3; ++t) {
      g[0] = gs[t - 1];
      g[1] = -3 * gs[t - 1];
      adamw_update<double>(w, g, m, v, t, cfg, scale, decay);
      for (int i = 0; i < 2; ++i) {
        const double gg = g[i] * scale;
        rm[i] = 0.9 * rm[i] + 0.1 * gg;
        rv[i] = 0.99 * rv[i] + 0.01 * gg * gg;
        const double mh = rm[i] / (1 - std::pow(0.9, t)), vh = rv[i] / (1 - std::pow(0.99, t));
        rw[i] -= 0.1 * (mh / (std::sqrt(vh) + 1e-8) + (decay ? 0.1 * rw[i] : 0.0));
        EXPECT_NEAR(w[i], rw[i], 1e-13) << "t=" << t << " i=" << i << " decay=" << decay;
        EXPECT_NEAR(m[i], rm[i], 1e-14);
        EXPECT_NEAR(v[i], rv[i], 1e-14);
      }
    }
    // Literal value for step 1 of element 0: g*s = 0.4, mhat = 0.4, vhat = 0.16,
    // update = 0.1 * (0.4 / (0.4 + 1e-8) + 0.1 * 1) when decaying.
    dt w1(1, 1), g1(1, 1), m1, v1;
    w1[0] = 1.0;
    g1[0] = 0.5;
    adamw_update<double>(w1, g1, m1, v1, 1, cfg, scale, decay);
    EXPECT_NEAR(w1[0], 1.0 - 0.1 * (0.4 / (0.4 + 1e-8) + (decay ? 0.1 : 0.0)), 1e-15);
  }
}

TEST(AdamW, FloatMatchesDouble) {
  dt w = rand_t(100, 700, 1), g = rand_t(100, 700, 2), m, v;
  ft wf = to_float(w), gf = to_float(g), mf, vf;
  adamw_config cfg;
  for (int t = 1; t <= 3; ++t) {
    adamw_update<double>(w, g, m, v, t, cfg, 0.5, true);
    adamw_update<float>(wf, gf, mf, vf, t, cfg, 0.5, true);
  }
  EXPECT_LT(rel_err(wf, w), kFloat);
  EXPECT_LT(rel_err(mf, m), kFloat);
  EXPECT_LT(rel_err(vf, v), kFloat);
}

TEST(AdamW, ClipScaleAndSumOfSquares) {
  EXPECT_DOUBLE_EQ(clip_scale(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clip_scale(1.0, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clip_scale(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_DOUBLE_EQ(clip_scale(4.0, 2.0), 2.0 / (4.0 + 1e-6));
  EXPECT_DOUBLE_EQ(clip_scale(100.0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(clip_scale(100.0, -1.0), 1.0);
  dt g(2, 2);
  g[0] = 1;
  g[1] = -2;
  g[2] = 3;
  g[3] = 0.5;
  EXPECT_DOUBLE_EQ(sum_of_squares<double>(g), 14.25);
  ft big(1000, 1000);  // many chunks; float input, double accumulation
  for (int64_t i = 0; i < big.size(); ++i) big[i] = (i % 3 == 0) ? 0.1f : -0.2f;
  double ref = 0;
  for (int64_t i = 0; i < big.size(); ++i) ref += double(big[i]) * double(big[i]);
  EXPECT_NEAR(sum_of_squares<float>(big), ref, 1e-9 * ref);
  EXPECT_EQ(sum_of_squares<float>(ft()), 0.0);
}

// --------------------------------------------------------- determinism ----

struct run_outputs {
  std::vector<ft> tensors;
  double loss = 0;
  double sumsq = 0;
};

run_outputs run_everything() {
  auto& eng = default_gemm_engine<float>();
  const int64_t B = 2, S = 64, H = 4, D = 128, V = 1000, N = B * S;
  run_outputs r;
  std::vector<int32_t> ids(N), labels(N);
  for (int64_t i = 0; i < N; ++i) {
    ids[i] = static_cast<int32_t>((i * 37) % V);
    labels[i] = static_cast<int32_t>((i * 53 + 1) % V);
  }
  ft table = to_float(rand_t(V, D, 1)), g = to_float(rand_t(1, D, 2, 0.5, 1.5)),
     be = to_float(rand_t(1, D, 3)), wqkv = to_float(rand_t(D, 3 * D, 4, -0.1, 0.1)),
     bqkv = to_float(rand_t(1, 3 * D, 5)), wout = to_float(rand_t(D, V, 6, -0.1, 0.1));
  ft x, h, qkv, att, probs, a2, logits, sp;
  layernorm_cache<float> c;
  embedding_forward(ids, table, x);
  layernorm_forward(x, g, be, 1e-5f, h, c);
  linear_forward(eng, 0, -1, h, wqkv, &bqkv, qkv);
  attention_forward(eng, 1, qkv, B, S, H, att, probs);
  gelu_forward(att, a2);
  add_inplace(a2, x);
  linear_forward<float>(eng, 2, -1, a2, wout, nullptr, logits);
  r.loss = softmax_xent_forward(logits, labels, sp);
  ft dlog, da2, dwout, datt, dqkv, dwqkv, dbqkv, dh, dx, dg, dbe, dtable(V, D);
  softmax_xent_backward(sp, labels, dlog);
  linear_backward<float>(eng, 2, -1, a2, wout, dlog, &da2, dwout, nullptr);
  gelu_backward(att, da2, datt);
  attention_backward(eng, 1, qkv, probs, datt, B, S, H, dqkv);
  linear_backward(eng, 0, -1, h, wqkv, dqkv, &dh, dwqkv, &dbqkv);
  layernorm_backward(x, g, c, dh, dx, dg, dbe);
  add_inplace(dx, da2);
  embedding_backward(ids, dx, dtable);
  r.sumsq = sum_of_squares(dwqkv) + sum_of_squares(dtable);
  ft m, v;
  adamw_update(wqkv, dwqkv, m, v, 1, adamw_config{}, clip_scale(std::sqrt(r.sumsq), 1.0), true);
  r.tensors = {logits, sp, probs, qkv, dlog, dwout, dqkv, dwqkv, dbqkv, dx, dg, dbe, dtable, wqkv};
  return r;
}

TEST(Determinism, BitIdenticalAcrossRunsWithTwoThreads) {
  const int saved = compute_threads();
  set_compute_threads(2);
  EXPECT_EQ(compute_threads(), 2);
  const run_outputs a = run_everything();
  const run_outputs b = run_everything();
  set_compute_threads(saved);
  EXPECT_TRUE(std::isfinite(a.loss));
  EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&a.sumsq, &b.sumsq, sizeof(double)), 0);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    ASSERT_EQ(a.tensors[i].size(), b.tensors[i].size());
    EXPECT_GT(a.tensors[i].size(), 0);
    EXPECT_EQ(std::memcmp(a.tensors[i].data(), b.tensors[i].data(),
                          sizeof(float) * a.tensors[i].size()),
              0)
        << "tensor " << i;
  }
}

// The same data at different heap addresses (so different alignments mod 64)
// gives the same bits: no address-dependent peeling in the kernels.
TEST(Determinism, IndependentOfBufferAlignment) {
  const int64_t R = 7, C = 37;  // 1036-byte buffers: consecutive heap blocks shift alignment
  const ft x0 = to_float(rand_t(R, C, 91, -3.0, 3.0)), dy0 = to_float(rand_t(R, C, 92));
  const ft g = to_float(rand_t(1, C, 93)), b = to_float(rand_t(1, C, 94));
  const ft qkv0 = to_float(rand_t(2 * 3, 3 * 12, 95));
  const ft w = to_float(rand_t(C, 3, 96));
  const std::vector<int32_t> labels = {0, 5, 36, 2, 2, 9, 30};
  struct outs {
    ft y1, y2, y3, y4, y5, y6, y7;
    double l = 0, ss = 0;
  };
  auto run = [&](const ft& x, const ft& dy, const ft& qkv, outs& o) {
    layernorm_cache<float> c;
    ft dg, db, probs;
    gelu_forward(x, o.y1);
    gelu_backward(x, dy, o.y2);
    layernorm_forward(x, g, b, 1e-5f, o.y3, c);
    layernorm_backward(x, g, c, dy, o.y4, dg, db);
    o.l = softmax_xent_forward(x, labels, o.y5);
    attention_forward<float>(default_gemm_engine<float>(), 0, qkv, 2, 3, 2, o.y6, probs);
    linear_forward<float>(default_gemm_engine<float>(), 0, -1, x, w, nullptr, o.y7);
    o.ss = sum_of_squares(x);
  };
  std::vector<ft> keep;  // interleaved allocations
  std::vector<outs> results(12);
  std::vector<int> aligns;
  for (auto& o : results) {
    keep.emplace_back(1, static_cast<int64_t>(keep.size() % 5 + 1));
    ft x = x0, dy = dy0, qkv = qkv0;
    aligns.push_back(static_cast<int>(reinterpret_cast<uintptr_t>(x.data()) % 64));
    run(x, dy, qkv, o);
    keep.push_back(std::move(x));
  }
  std::sort(aligns.begin(), aligns.end());
  if (std::unique(aligns.begin(), aligns.end()) - aligns.begin() < 2)  // e.g. under ASan
    GTEST_SKIP() << "the allocator gave every copy the same alignment mod 64";
  auto same = [](const ft& a, const ft& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
  };
  for (size_t i = 1; i < results.size(); ++i) {
    const outs &a = results[0], &o = results[i];
    EXPECT_TRUE(same(a.y1, o.y1)) << "gelu fwd, copy " << i;
    EXPECT_TRUE(same(a.y2, o.y2)) << "gelu bwd, copy " << i;
    EXPECT_TRUE(same(a.y3, o.y3)) << "layernorm fwd, copy " << i;
    EXPECT_TRUE(same(a.y4, o.y4)) << "layernorm bwd, copy " << i;
    EXPECT_TRUE(same(a.y5, o.y5)) << "softmax, copy " << i;
    EXPECT_TRUE(same(a.y6, o.y6)) << "attention, copy " << i;
    EXPECT_TRUE(same(a.y7, o.y7)) << "linear, copy " << i;
    EXPECT_EQ(std::memcmp(&a.l, &o.l, sizeof(double)), 0) << "xent loss, copy " << i;
    EXPECT_EQ(std::memcmp(&a.ss, &o.ss, sizeof(double)), 0) << "sum_of_squares, copy " << i;
  }
}

}  // namespace
}  // namespace cleave
