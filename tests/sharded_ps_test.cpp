// --ps-shards: the slicing arithmetic, the split of each product, the
// shard threads, and a model trained through S shards (columns, rows,
// uneven splits, attention left whole) against the same model trained
// unsharded.

#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

#include "actors/ps/shards/sharded_ps.hpp"
#include "kernels/random.hpp"
#include "schema/errors.hpp"
#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"

using namespace cleave;
using namespace cleave::testing;

namespace {

tensor numbered(int64_t rows, int64_t cols) {
  tensor t(rows, cols);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(i);
  return t;
}

TEST(shard_slices, split_evenly_covers_the_range_in_near_equal_parts) {
  for (int64_t n : {0, 1, 7, 10, 256, 1000})
    for (int s : {1, 2, 3, 8}) {
      auto parts = split_evenly(n, s);
      ASSERT_EQ(parts.size(), static_cast<size_t>(s));
      int64_t at = 0, lo = n, hi = 0;
      for (const auto& r : parts) {
        EXPECT_EQ(r.begin, at);
        at = r.end;
        lo = std::min(lo, r.size());
        hi = std::max(hi, r.size());
      }
      EXPECT_EQ(at, n);
      EXPECT_LE(hi - lo, 1) << n << " over " << s;
    }
}

TEST(shard_slices, copy_out_copy_in_and_add_out_round_trip_on_both_axes) {
  const tensor full = numbered(6, 10);
  for (auto axis : {shard_axis::columns, shard_axis::rows}) {
    const int64_t extent = axis == shard_axis::columns ? full.cols() : full.rows();
    tensor rebuilt(6, 10);
    for (const auto& r : split_evenly(extent, 4)) {
      const shard_slice s{axis, r};
      tensor part;
      copy_out(full, s, part);
      EXPECT_EQ(part.rows(), axis == shard_axis::columns ? 6 : r.size());
      EXPECT_EQ(part.cols(), axis == shard_axis::columns ? r.size() : 10);
      if (part.size() > 0) {
        const int64_t r0 = axis == shard_axis::rows ? r.begin : 0;
        const int64_t c0 = axis == shard_axis::columns ? r.begin : 0;
        EXPECT_EQ(part.at(0, 0), full.at(r0, c0));
      }
      copy_in(part, s, rebuilt);
      add_out(full, s, part);  // part now holds twice the slice
      for (int64_t i = 0; i < part.size(); ++i) EXPECT_EQ(std::fmod(part[i], 2.0f), 0.0f);
    }
    for (int64_t i = 0; i < full.size(); ++i) ASSERT_EQ(rebuilt[i], full[i]);
  }
}

TEST(shard_pool, runs_every_shard_at_once_and_reports_a_shard_failure) {
  shard_pool pool(4);
  EXPECT_EQ(pool.size(), 4);
  // Every shard must be inside the job at the same time for it to finish.
  std::atomic<int> arrived{0};
  std::mutex mu;
  std::set<int> seen;
  pool.run([&](int s) {
    ++arrived;
    while (arrived.load() < 4) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(s);
  });
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
  EXPECT_THROW(pool.run([](int s) {
                 if (s == 2) throw std::runtime_error("shard 2 failed");
               }),
               std::runtime_error);
  int runs = 0;
  pool.run([&](int s) {
    if (s == 0) ++runs;
  });
  EXPECT_EQ(runs, 1) << "the pool must keep working after a failed job";
}

// Multiplies locally and records the output shape of every product.
class recording_engine final : public gemm_engine<float> {
 public:
  void gemm(gemm_tag, const_view<float> a, bool ta, const_view<float> b, bool tb,
            mut_view<float> c, float beta) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      outputs.insert({c.rows, c.cols});
    }
    gemm_local<float>(a, ta, b, tb, c, beta);
  }
  bool computes_here(gemm_tag, int64_t, int64_t, int64_t) override {
    ++asked;
    return here;
  }
  void add_local_seconds(double seconds, int64_t) override { local_seconds += seconds; }
  std::set<std::pair<int64_t, int64_t>> outputs;
  bool here = false;
  int asked = 0;
  double local_seconds = 0;

 private:
  std::mutex mu_;
};

// The trainer's step, through either store.
std::vector<double> train(model& m, parameter_store& store, const batch& b, int steps) {
  adamw_config opt;
  opt.lr = 1e-2;
  opt.clip_norm = 0.5;  // small enough to clip: the norm must be global
  std::vector<double> losses;
  EXPECT_FALSE(store.attach(m.parameters()));
  for (int t = 1; t <= steps; ++t) {
    store.zero_grads();
    losses.push_back(m.train_batch(b));
    const double scale = clip_scale(std::sqrt(store.reduce_gradients()), opt.clip_norm);
    store.update(opt, t, scale);
  }
  return losses;
}

// The key bias of attention has a zero gradient in exact arithmetic, so
// Adam turns its rounding noise into steps of ~1e-5: hence the absolute term.
void expect_close(const tensor& a, const tensor& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (int64_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-4 + 1e-4 * std::abs(a[i])) << what << " element " << i;
}

// What the coordinator keeps after training through shards: no AdamW
// moments, and no whole gradient of a weight only products use.
void expect_state_in_shards(const std::deque<parameter>& params) {
  int product_weights = 0;
  for (const auto& p : params) {
    EXPECT_TRUE(p.adam_m.empty() && p.adam_v.empty()) << p.name << " keeps its moments on the coordinator";
    EXPECT_EQ(p.grad.empty(), p.product_weight) << p.name;
    product_weights += p.product_weight ? 1 : 0;
  }
  EXPECT_GT(product_weights, 0);
}

void check_sharded_training(const model_config& cfg, int shards) {
  const batch b = make_batch(cfg, 5);
  auto ref = make_model(cfg, 7, default_gemm_engine<float>());
  ASSERT_TRUE(ref) << describe(ref.error());
  local_parameter_store local;
  const auto want = train(**ref, local, b, 8);

  std::vector<recording_engine> engines(static_cast<size_t>(shards));
  std::vector<gemm_engine<float>*> ptrs;
  for (auto& e : engines) ptrs.push_back(&e);
  sharded_ps ps(ptrs);
  auto m = make_model(cfg, 7, ps);
  ASSERT_TRUE(m) << describe(m.error());
  const auto got = train(**m, ps, b, 8);

  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << "loss of step " << i + 1;
  auto& ps_params = (*m)->parameters();
  auto& ref_params = (*ref)->parameters();
  expect_state_in_shards(ps_params);
  ps.gather_moments();  // as a checkpoint does
  for (size_t i = 0; i < ref_params.size(); ++i) {
    expect_close(ps_params[i].value, ref_params[i].value, ref_params[i].name + " value");
    expect_close(ps_params[i].adam_m, ref_params[i].adam_m, ref_params[i].name + " adam_m");
    expect_close(ps_params[i].adam_v, ref_params[i].adam_v, ref_params[i].name + " adam_v");
  }
  ps.forget_moments();
  expect_state_in_shards(ps_params);
  // Every shard multiplied, and only its slice: no shard ever produced a
  // whole forward output of the first layer.
  const int64_t first_out = cfg.kind == "mlp" ? cfg.hidden[0] : 3 * cfg.d_model;
  for (int s = 0; s < shards; ++s) {
    const auto& seen = engines[static_cast<size_t>(s)].outputs;
    EXPECT_FALSE(seen.empty()) << "shard " << s << " did no product";
    EXPECT_EQ(seen.count({b.rows, first_out}), 0u) << "shard " << s << " ran a whole layer";
    EXPECT_EQ(seen.count({b.rows, split_evenly(first_out, shards)[static_cast<size_t>(s)].size()}), 1u)
      << "shard " << s << " never computed its columns";
  }
}

// One shard is the in-process store: the same operations in the same order,
// so the same bits.
TEST(parameter_store, one_shard_and_the_local_store_agree_bit_for_bit) {
  for (const auto& cfg : {tiny_mlp(), tiny_gpt()}) {
    const batch b = make_batch(cfg, 5);
    auto ref = make_model(cfg, 7, default_gemm_engine<float>());
    ASSERT_TRUE(ref) << describe(ref.error());
    local_parameter_store local;
    const auto want = train(**ref, local, b, 4);
    sharded_ps ps({&default_gemm_engine<float>()});
    auto m = make_model(cfg, 7, ps);
    ASSERT_TRUE(m) << describe(m.error());
    EXPECT_EQ(train(**m, ps, b, 4), want) << cfg.kind;
    ps.gather_moments();
    for (size_t i = 0; i < (*ref)->parameters().size(); ++i) {
      const auto& p = (*m)->parameters()[i];
      const auto& q = (*ref)->parameters()[i];
      EXPECT_EQ(p.value.storage(), q.value.storage()) << p.name;
      EXPECT_EQ(p.adam_v.storage(), q.adam_v.storage()) << p.name;
    }
  }
}

TEST(parameter_store, finds_parameters_by_name_and_refuses_duplicates) {
  auto m = make_model(tiny_mlp(), 7, default_gemm_engine<float>());
  ASSERT_TRUE(m) << describe(m.error());
  auto& params = (*m)->parameters();
  local_parameter_store store;
  ASSERT_FALSE(store.attach(params));
  ASSERT_EQ(store.registered().size(), params.size());
  for (const auto& p : params) {
    ASSERT_EQ(store.find(p.name), &p) << p.name;
    EXPECT_EQ(store.registered()[static_cast<size_t>(p.id)], &p);
  }
  EXPECT_EQ(store.find("no.such.parameter"), nullptr);

  std::deque<parameter> twins(2);
  twins[0].name = twins[1].name = "fc0.w";
  twins[0].id = 0;
  twins[1].id = 1;
  auto err = store.attach(twins);
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("two parameters are named fc0.w"), std::string::npos) << describe(err);
  twins[1].name = "fc1.w";
  twins[1].id = 5;
  EXPECT_TRUE(store.attach(twins));
}

// A product tagged with a weight it does not carry is not sliced as that weight.
TEST(sharded_ps, a_tag_naming_another_operand_is_not_sliced) {
  auto cfg = tiny_mlp();
  std::vector<recording_engine> engines(2);
  sharded_ps ps({&engines[0], &engines[1]});
  auto m = make_model(cfg, 7, ps);
  ASSERT_TRUE(m) << describe(m.error());
  ASSERT_FALSE(ps.attach((*m)->parameters()));
  const auto& w = (*m)->parameters()[0].value;
  tensor x(3, w.rows()), other(w.rows(), w.cols()), y(3, w.cols());
  ps.gemm({0, gemm_role::forward, 0}, x.view(), false, other.view(), false, y.view(), 0.0f);
  EXPECT_EQ(engines[0].outputs.count({3, w.cols()}), 1u);  // whole, on shard 0
  EXPECT_TRUE(engines[1].outputs.empty());
  ps.gemm({0, gemm_role::forward, 0}, x.view(), false, w.view(), false, y.view(), 0.0f);
  EXPECT_FALSE(engines[1].outputs.empty());  // the weight itself: sliced
}

TEST(sharded_ps, mlp_on_two_shards_trains_like_one) { check_sharded_training(tiny_mlp(), 2); }
TEST(sharded_ps, mlp_on_three_uneven_shards_trains_like_one) { check_sharded_training(tiny_mlp(), 3); }
TEST(sharded_ps, gpt_on_two_shards_trains_like_one) { check_sharded_training(tiny_gpt(), 2); }
TEST(sharded_ps, gpt_on_five_shards_trains_like_one) { check_sharded_training(tiny_gpt(), 5); }

// Attention's products run whole on shard 0, so shard 0 answers for them;
// a weight's product is split over the shards and never stays whole here.
TEST(sharded_ps, shard_zero_answers_whether_attention_products_stay_here) {
  std::vector<recording_engine> engines(2);
  engines[0].here = true;
  engines[1].here = true;
  sharded_ps ps({&engines[0], &engines[1]});
  EXPECT_TRUE(ps.computes_here({3, gemm_role::attn_scores}, 8, 8, 4));
  EXPECT_TRUE(ps.computes_here({5, gemm_role::attn_grad}, 8, 4, 8));
  for (gemm_role role : {gemm_role::forward, gemm_role::grad_input, gemm_role::grad_weight})
    EXPECT_FALSE(ps.computes_here({1, role}, 8, 8, 8));
  EXPECT_EQ(engines[0].asked, 2);
  EXPECT_EQ(engines[1].asked, 0);
  engines[0].here = false;
  EXPECT_FALSE(ps.computes_here({3, gemm_role::attn_values}, 8, 4, 8));
  ps.add_local_seconds(0.5, 6);
  EXPECT_EQ(engines[0].local_seconds, 0.5);
  EXPECT_EQ(engines[1].local_seconds, 0.0);
}

TEST(sharded_ps, more_shards_than_columns_leaves_some_slices_empty) {
  auto cfg = tiny_mlp();
  cfg.classes = 2;  // the logits layer has 2 columns for 4 shards
  check_sharded_training(cfg, 4);
}

}  // namespace

namespace {

// A parameter with its value, a gradient buffer and the axis it is cut on.
parameter weight(int32_t id, int64_t rows, int64_t cols, shard_axis axis, uint64_t seed) {
  parameter p;
  p.name = axis == shard_axis::columns ? "column-split" : "row-split";
  p.id = id;
  p.value = random_tensor(rows, cols, seed);
  p.grad.resize(rows, cols);
  p.shard_split = axis;
  return p;
}

// Runs a split batch the way a shard does, each shard on its own slices
// (copied out of the whole parameters), then sums the partials.
void run_split(product_split& split, split_batch& batch, const std::vector<parameter*>& params) {
  for (size_t s = 0; s < batch.per_shard.size(); ++s) {
    shard_store store;
    std::vector<slice_state> slices(params.size());
    for (size_t id = 0; id < params.size(); ++id) {
      slices[id].where = split.slice(id, s);
      copy_out(params[id]->value, slices[id].where, slices[id].value);
    }
    store.attach(std::move(slices));
    for (const auto& job : store.jobs_for(batch.per_shard[s]))
      gemm_local<float>(job.a, job.trans_a, job.b, job.trans_b, job.c, job.beta);
    for (size_t id = 0; id < params.size(); ++id)  // the gradient slices back into the whole
      copy_in(store.slice(id).grad, store.slice(id).where, params[id]->grad);
  }
  split.reduce();
}

}  // namespace

// Each product of the table in shard_split.hpp, split over 3 uneven shards
// and run slice by slice, is the whole product; a product whose tag names
// another operand stays whole.
TEST(product_split, every_role_on_both_axes_rebuilds_the_whole_product) {
  parameter cols = weight(0, 7, 10, shard_axis::columns, 1), rows = weight(1, 10, 5, shard_axis::rows, 2);
  std::vector<parameter*> params{&cols, &rows};
  product_split split;
  split.attach(params, 3);
  EXPECT_EQ(split.slice(0, 0).range.size(), 4);  // 10 columns: 4, 3, 3
  EXPECT_EQ(split.slice(1, 2).range.end, 10);
  for (parameter* w : params) {
    const int64_t k = w->value.rows(), n = w->value.cols();
    const tensor x = random_tensor(6, k, 3), dy = random_tensor(6, n, 4);
    tensor y(6, n), dx(6, k), y_want(6, n), dx_want(6, k), dw_want(k, n);
    gemm_local<float>(x.view(), false, w->value.view(), false, y_want.view(), 0.0f);
    gemm_local<float>(dy.view(), false, w->value.view(), true, dx_want.view(), 0.0f);
    gemm_local<float>(x.view(), true, dy.view(), false, dw_want.view(), 0.0f);
    split_batch batch;
    split.split({{{0, gemm_role::forward, w->id}, x.view(), false, w->value.view(), false, y.view(), 0.0f},
                 {{1, gemm_role::grad_input, w->id}, dy.view(), false, w->value.view(), true, dx.view(), 0.0f},
                 {{2, gemm_role::grad_weight, w->id}, x.view(), true, dy.view(), false, w->grad.view(), 0.0f}},
                batch);
    EXPECT_TRUE(batch.whole.empty());
    size_t products = 0;
    for (const auto& mine : batch.per_shard) products += mine.size();
    EXPECT_EQ(products, 9u) << "three roles on three shards";
    run_split(split, batch, params);
    expect_close(y, y_want, w->name + " forward");
    expect_close(dx, dx_want, w->name + " grad_input");
    expect_close(w->grad, dw_want, w->name + " grad_weight");
  }
  // The tag names parameter 0 but the operand is another tensor: whole.
  const tensor x = random_tensor(6, 7, 5), other = random_tensor(7, 10, 6);
  tensor y(6, 10);
  split_batch batch;
  split.split({{{0, gemm_role::forward, 0}, x.view(), false, other.view(), false, y.view(), 0.0f}}, batch);
  EXPECT_EQ(batch.whole.size(), 1u);
  for (const auto& mine : batch.per_shard) EXPECT_TRUE(mine.empty());
}
