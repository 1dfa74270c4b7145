// Whole-model checks: the composed backward pass agrees with a finite
// difference of the loss along the gradient, seeds are deterministic, and a
// model can fit a fixed batch.

#include <cmath>

#include <gtest/gtest.h>

#include "training/models/model.hpp"
#include "kernels/random.hpp"
#include "schema/errors.hpp"
#include "tests/model_fixtures.hpp"

using namespace cleave;
using namespace cleave::testing;

namespace {

std::unique_ptr<model> build(const model_config& cfg, uint64_t seed = 3) {
  auto m = make_model(cfg, seed, default_gemm_engine<float>());
  EXPECT_TRUE(m) << describe(m.error());
  return std::move(*m);
}

// d/dt L(theta + t * g / |g|) at t = 0 must equal |g|.
void check_directional_derivative(const model_config& cfg) {
  auto m = build(cfg);
  auto b = make_batch(cfg, 9);
  for (auto& p : m->parameters()) p.grad.zero();
  m->train_batch(b);
  double norm2 = 0;
  for (auto& p : m->parameters()) norm2 += sum_of_squares(p.grad);
  const double norm = std::sqrt(norm2);
  ASSERT_GT(norm, 0);
  auto shift = [&](double t) {
    for (auto& p : m->parameters())
      for (int64_t i = 0; i < p.value.size(); ++i)
        p.value[i] += static_cast<float>(t * p.grad[i] / norm);
  };
  const double h = 1e-2;
  shift(h);
  const double up = m->evaluate(b).loss_sum / b.rows;
  shift(-2 * h);
  const double down = m->evaluate(b).loss_sum / b.rows;
  shift(h);
  const double numeric = (up - down) / (2 * h);
  EXPECT_NEAR(numeric / norm, 1.0, 2e-2) << "numeric " << numeric << " analytic " << norm;
}

void check_fits_a_batch(const model_config& cfg, double lr) {
  auto m = build(cfg);
  auto b = make_batch(cfg, 11);
  adamw_config opt;
  opt.lr = lr;
  opt.weight_decay = 0;
  double first = 0, last = 0;
  for (int step = 1; step <= 60; ++step) {
    for (auto& p : m->parameters()) p.grad.zero();
    last = m->train_batch(b);
    if (step == 1) first = last;
    for (auto& p : m->parameters())
      adamw_update(p.value, p.grad, p.adam_m, p.adam_v, step, opt, 1.0, p.decay);
  }
  EXPECT_LT(last, 0.2 * first) << "first " << first << " last " << last;
}

}  // namespace

TEST(models, mlp_gradient_matches_finite_difference) { check_directional_derivative(tiny_mlp()); }
TEST(models, gpt_gradient_matches_finite_difference) { check_directional_derivative(tiny_gpt()); }
TEST(models, mlp_fits_a_fixed_batch) { check_fits_a_batch(tiny_mlp(), 1e-2); }
TEST(models, gpt_fits_a_fixed_batch) { check_fits_a_batch(tiny_gpt(), 1e-2); }

TEST(models, same_seed_same_weights_other_seed_other_weights) {
  auto a = build(tiny_gpt(), 5);
  auto b = build(tiny_gpt(), 5);
  auto c = build(tiny_gpt(), 6);
  auto& pa = a->parameters();
  ASSERT_EQ(pa.size(), b->parameters().size());
  bool differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].value.storage(), b->parameters()[i].value.storage()) << pa[i].name;
    differs |= pa[i].value.storage() != c->parameters()[i].value.storage();
  }
  EXPECT_TRUE(differs);
}

TEST(models, gpt_parameter_count_matches_opt_125m_shape) {
  auto cfg = gpt_preset("opt-125m", 50272, 512);
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->d_model, 768);
  EXPECT_EQ(cfg->layers, 12);
  EXPECT_EQ(cfg->heads, 12);
  EXPECT_EQ(cfg->ffn, 3072);
}

TEST(models, bad_configs_are_refused_with_a_reason) {
  auto cfg = tiny_gpt();
  cfg.heads = 3;
  auto m = make_model(cfg, 1, default_gemm_engine<float>());
  ASSERT_FALSE(m);
  EXPECT_NE(describe(m.error()).find("divisible"), std::string::npos);
  cfg = tiny_mlp();
  cfg.hidden = {0};
  EXPECT_FALSE(make_model(cfg, 1, default_gemm_engine<float>()));
  cfg.kind = "resnet";
  m = make_model(cfg, 1, default_gemm_engine<float>());
  ASSERT_FALSE(m);
  EXPECT_NE(describe(m.error()).find("unknown model"), std::string::npos);
  EXPECT_FALSE(gpt_preset("opt-999b", 256, 128));
}
