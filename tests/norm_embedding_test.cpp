// Layer norm and the embedding (kernels/ops.hpp): analytic gradients
// against central finite differences in double precision, and float
// against double.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/ops.hpp"
#include "kernels/tensor.hpp"
#include "tests/gradcheck.hpp"

namespace cleave {
namespace {

using namespace gradcheck;

// ----------------------------------------------------------- layernorm ----

TEST(LayerNorm, Gradcheck) {
  dt x = rand_t(5, 12, 11, -2.0, 3.0), g = rand_t(1, 12, 12, 0.5, 1.5), b = rand_t(1, 12, 13),
     R = rand_t(5, 12, 14);
  const double eps = 1e-5;
  dt y;
  layernorm_cache<double> cache;
  auto loss = [&] {
    layernorm_forward<double>(x, g, b, eps, y, cache);
    return dot(y, R);
  };
  loss();
  for (int64_t r = 0; r < 5; ++r) {  // naive forward
    double mu = 0, var = 0;
    for (int64_t c = 0; c < 12; ++c) mu += x.at(r, c) / 12;
    for (int64_t c = 0; c < 12; ++c) var += (x.at(r, c) - mu) * (x.at(r, c) - mu) / 12;
    for (int64_t c = 0; c < 12; ++c)
      EXPECT_NEAR(y.at(r, c), (x.at(r, c) - mu) / std::sqrt(var + eps) * g[c] + b[c], 1e-12);
  }
  dt dx, dg, db;
  layernorm_backward<double>(x, g, cache, R, dx, dg, db);
  EXPECT_LT(rel_err(dx, numeric_grad(x, loss)), kTight);
  EXPECT_LT(rel_err(dg, numeric_grad(g, loss)), kTight);
  EXPECT_LT(rel_err(db, numeric_grad(b, loss)), kTight);
  // Parameter gradients accumulate.
  dt dg1 = dg;
  loss();
  layernorm_backward<double>(x, g, cache, R, dx, dg, db);
  for (int64_t i = 0; i < dg.size(); ++i) EXPECT_NEAR(dg[i], 2 * dg1[i], 1e-12);
}

TEST(LayerNorm, FloatMatchesDouble) {
  dt x = rand_t(70, 300, 1, -2.0, 3.0), g = rand_t(1, 300, 2, 0.5, 1.5), b = rand_t(1, 300, 3),
     dy = rand_t(70, 300, 4);
  ft xf = to_float(x), gf = to_float(g), bf = to_float(b), dyf = to_float(dy);
  dt y, dx, dg, db;
  ft yf, dxf, dgf, dbf;
  layernorm_cache<double> c;
  layernorm_cache<float> cf;
  layernorm_forward<double>(x, g, b, 1e-5, y, c);
  layernorm_forward<float>(xf, gf, bf, 1e-5f, yf, cf);
  layernorm_backward<double>(x, g, c, dy, dx, dg, db);
  layernorm_backward<float>(xf, gf, cf, dyf, dxf, dgf, dbf);
  EXPECT_LT(rel_err(yf, y), kFloat);
  EXPECT_LT(rel_err(dxf, dx), kFloat);
  EXPECT_LT(rel_err(dgf, dg), kFloat);
  EXPECT_LT(rel_err(dbf, db), kFloat);
}

// ----------------------------------------------------------- embedding ----

TEST(Embedding, GradcheckRepeatedIds) {
  const std::vector<int32_t> ids = {3, 1, 3, 0, 3, 5, 1};
  dt table = rand_t(6, 4, 21), R = rand_t(7, 4, 22);
  dt y;
  auto loss = [&] {
    embedding_forward<double>(ids, table, y);
    return dot(y, R);
  };
  loss();
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(y.at(i, c), table.at(ids[i], c));
  dt dtable(6, 4);
  embedding_backward<double>(ids, R, dtable);
  const dt n = numeric_grad(table, loss);
  EXPECT_LT(rel_err(dtable, n), kTight);
  for (int64_t c = 0; c < 4; ++c) {
    EXPECT_EQ(dtable.at(2, c), 0.0);  // unused rows stay zero
    EXPECT_NEAR(dtable.at(3, c), R.at(0, c) + R.at(2, c) + R.at(4, c), 1e-14);
  }
}

TEST(Embedding, FloatMatchesDoubleAndRangeCheck) {
  std::mt19937 gen(5);
  std::vector<int32_t> ids(300);
  for (auto& i : ids) i = static_cast<int32_t>(gen() % 50);
  dt table = rand_t(50, 200, 1), dy = rand_t(300, 200, 2), y, dtab(50, 200);
  ft tf = to_float(table), dyf = to_float(dy), yf, dtf(50, 200);
  embedding_forward<double>(ids, table, y);
  embedding_forward<float>(ids, tf, yf);
  embedding_backward<double>(ids, dy, dtab);
  embedding_backward<float>(ids, dyf, dtf);
  EXPECT_LT(rel_err(yf, y), kFloat);
  EXPECT_LT(rel_err(dtf, dtab), kFloat);
  std::vector<int32_t> bad = {0, 50};
  EXPECT_THROW(embedding_forward<double>(bad, table, y), std::out_of_range);
  bad = {-1};
  dt dy1 = rand_t(1, 200, 3);
  EXPECT_THROW(embedding_backward<double>(bad, dy1, dtab), std::out_of_range);
}

}  // namespace
}  // namespace cleave
