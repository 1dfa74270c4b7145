// Whole-model checks: the composed backward pass agrees with a finite
// difference of the loss along the gradient, seeds are deterministic, and a
// model can fit a fixed batch.

#include <cmath>

#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "actors/planner/step_gemms.hpp"
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

TEST(models, gpt_presets_have_the_opt_shapes) {
  struct shape {
    const char* name;
    int64_t d, layers, heads, ffn;
  };
  for (const shape& want : {shape{"opt-125m", 768, 12, 12, 3072}, shape{"opt-30b", 7168, 48, 56, 28672}}) {
    auto cfg = gpt_preset(want.name, 50272, 512);
    ASSERT_TRUE(cfg) << want.name;
    EXPECT_EQ(std::make_tuple(cfg->d_model, cfg->layers, cfg->heads, cfg->ffn),
              std::make_tuple(want.d, want.layers, want.heads, want.ffn))
      << want.name;
  }
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

namespace {

// Multiplies locally and counts every product by shape and role.
class shape_recorder final : public gemm_engine<float> {
 public:
  void gemm(gemm_tag tag, const_view<float> a, bool ta, const_view<float> b, bool tb,
            mut_view<float> c, float beta) override {
    const int64_t k = ta ? a.rows : a.cols;
    ++counts[{c.rows, c.cols, k, static_cast<int>(tag.role)}];
    gemm_local(a, ta, b, tb, c, beta);
  }
  // Each batch of two or more products, by its products' shapes and roles.
  void gemm_batch(const std::vector<gemm_job<float>>& jobs) override {
    if (jobs.size() > 1) {
      std::vector<shape> together;
      for (const auto& j : jobs)
        together.emplace_back(j.c.rows, j.c.cols, j.trans_a ? j.a.rows : j.a.cols, static_cast<int>(j.tag.role));
      ++batches[together];
    }
    gemm_engine<float>::gemm_batch(jobs);
  }
  bool computes_here(gemm_tag, int64_t, int64_t, int64_t) override { return false; }
  using shape = std::tuple<int64_t, int64_t, int64_t, int>;
  std::map<shape, int64_t> counts;
  std::map<std::vector<shape>, int64_t> batches;
};

void expect_step_gemms_match_a_real_step(const model_config& cfg) {
  shape_recorder rec;
  auto m = make_model(cfg, 3, rec);
  ASSERT_TRUE(m) << describe(m.error());
  const auto b = make_batch(cfg, 9);
  (*m)->train_batch(b);
  const int64_t samples = cfg.kind == "gpt" ? b.rows / cfg.context : b.rows;
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, int64_t> predicted;
  for (const auto& g : step_gemms(cfg, samples))
    predicted[{g.problem.m, g.problem.n, g.problem.k, static_cast<int>(g.problem.role)}] += g.count;
  EXPECT_EQ(predicted, rec.counts);
  // The batches the simulator issues (issue_batches) are the model's own.
  const auto gemms = step_gemms(cfg, samples);
  std::map<std::vector<shape_recorder::shape>, int64_t> batched;
  size_t next = 0;
  for (const auto& b : issue_batches(gemms)) {
    ASSERT_EQ(b.first, next) << "the batches cover every product once, in order";
    ASSERT_LT(b.first, b.last);
    next = b.last;
    if (b.last - b.first < 2) continue;
    std::vector<shape_recorder::shape> together;
    for (size_t i = b.first; i < b.last; ++i) {
      const auto& g = gemms[i].problem;
      together.emplace_back(g.m, g.n, g.k, static_cast<int>(g.role));
    }
    batched[together] += gemms[b.first].count;
  }
  EXPECT_EQ(next, gemms.size());
  EXPECT_EQ(batched, rec.batches);
  EXPECT_FALSE(rec.batches.empty()) << "no batch: the comparison proves nothing";
}

}  // namespace

TEST(models, step_gemms_lists_the_products_a_real_step_issues) {
  expect_step_gemms_match_a_real_step(tiny_mlp());
  expect_step_gemms_match_a_real_step(tiny_gpt());
  auto wide = tiny_gpt();
  wide.ffn = 48;
  wide.heads = 4;
  expect_step_gemms_match_a_real_step(wide);
}

TEST(models, step_gemms_of_opt_30b_count_six_flops_per_weight_and_token) {
  auto cfg = gpt_preset("opt-30b", 50272, 512);
  ASSERT_TRUE(cfg);
  double linear = 0;
  for (const auto& g : step_gemms(*cfg, 1))
    if (g.problem.role == gemm_role::forward || g.problem.role == gemm_role::grad_input
        || g.problem.role == gemm_role::grad_weight)
      linear += g.flops();
  const double weights = 48.0 * (4 * 7168.0 * 7168 + 2 * 7168.0 * 28672) + 7168.0 * 50272;
  EXPECT_NEAR(linear, 6 * weights * 512, 1e-9 * linear);
}
