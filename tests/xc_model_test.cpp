// The extreme classifier (--model=xc): its backward pass against a finite
// difference of its loss, sparse mode with every neuron active against the
// dense full softmax over 50 training steps, and the row-sparse store's
// promise that untouched rows keep their weights and moments.

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "actors/device/device_actor.hpp"
#include "actors/ps/modellet/modellet_ps.hpp"
#include "actors/ps/modellet/modellet_transport.hpp"
#include "kernels/random.hpp"
#include "schema/checkpoint_file.hpp"
#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "tests/test_util.hpp"
#include "training/data/xc_format.hpp"
#include "training/parameter_store.hpp"
#include "training/trainer.hpp"

using namespace cleave;

namespace {

constexpr int64_t features = 300, labels = 40;

// Samples with a key feature k < labels, whose labels are k and, for half of
// them, k + 1, among 2 to 4 noise features: a task a few steps can learn.
sparse_dataset random_xc(int64_t samples, uint64_t seed) {
  rng r(seed);
  sparse_dataset d;
  d.samples = samples;
  d.features = features;
  d.labels = labels;
  for (int64_t i = 0; i < samples; ++i) {
    const auto key = static_cast<int32_t>(r.below(labels));
    std::vector<int32_t> f{key}, l{key};
    for (int k = 0; k < 2 + static_cast<int>(r.below(3)); ++k)
      f.push_back(static_cast<int32_t>(labels + r.below(features - labels)));
    std::sort(f.begin(), f.end());
    f.erase(std::unique(f.begin(), f.end()), f.end());
    if (r.below(2) == 1) l.push_back((key + 1) % labels);
    std::sort(l.begin(), l.end());
    for (int32_t id : f) {
      d.feature_ids.push_back(id);
      d.values.push_back(static_cast<float>(0.5 + r.uniform()));
    }
    d.label_ids.insert(d.label_ids.end(), l.begin(), l.end());
    d.feature_offsets.push_back(static_cast<int64_t>(d.feature_ids.size()));
    d.label_offsets.push_back(static_cast<int64_t>(d.label_ids.size()));
  }
  return d;
}

model_config tiny_xc() {
  model_config cfg;
  cfg.kind = "xc";
  cfg.inputs = features;
  cfg.hidden = {8};
  cfg.classes = labels;
  return cfg;
}

// Sparse mode with every neuron active computes the full softmax.
xc_settings all_active() {
  xc_settings xc;
  xc.lsh.hashes = 2;
  xc.lsh.tables = 4;
  xc.min_active = labels;
  return xc;
}

// LSH sampling with few, small buckets and a frequent refresh: a small
// active set on the tasks of random_xc.
xc_settings small_active_set() {
  xc_settings xc;
  xc.lsh.hashes = 2;
  xc.lsh.tables = 4;
  xc.bucket_size = 4;
  xc.min_active = 8;
  xc.schedule = {10, 30, 1.0};
  return xc;
}

xc_settings dense() {
  xc_settings xc;
  xc.sparse = false;
  return xc;
}

batch a_batch(uint64_t seed) {
  auto data = make_xc_data({random_xc(12, seed), random_xc(1, seed + 1)}, 1);
  std::vector<int64_t> ids(12);
  for (int64_t i = 0; i < 12; ++i) ids[static_cast<size_t>(i)] = i;
  batch b;
  data->fill_train(ids.data(), 12, b);
  return b;
}

// d/dt L(theta + t g / |g|) at t = 0 must equal |g|; the loss is summed in
// double and the finite difference taken in double (as models_test does for
// mlp and gpt). evaluate() scores every neuron, the loss all_active() and
// dense() train on.
void check_directional_derivative(const xc_settings& xc) {
  auto m = make_model(tiny_xc(), 3, default_gemm_engine<float>(), xc);
  ASSERT_TRUE(m) << describe(m.error());
  auto b = a_batch(9);
  local_parameter_store store;
  ASSERT_FALSE(store.attach((*m)->parameters()));
  store.zero_grads();
  (*m)->train_batch(b);
  const double norm = std::sqrt(store.reduce_gradients());
  ASSERT_GT(norm, 0);
  auto shift = [&](double t) {
    for (auto& p : (*m)->parameters())
      for (int64_t i = 0; i < p.value.size(); ++i)
        p.value[i] += static_cast<float>(t * p.grad[i] / norm);
  };
  const double h = 1e-2;
  shift(h);
  const double up = (*m)->evaluate(b).loss_sum / static_cast<double>(b.rows);
  shift(-2 * h);
  const double down = (*m)->evaluate(b).loss_sum / static_cast<double>(b.rows);
  shift(h);
  const double numeric = (up - down) / (2 * h);
  EXPECT_NEAR(numeric / norm, 1.0, 2e-2) << "numeric " << numeric << " analytic " << norm;
}

TEST(xc_model, dense_gradient_matches_finite_difference) { check_directional_derivative(dense()); }

TEST(xc_model, sparse_gradient_matches_finite_difference) {
  check_directional_derivative(all_active());
}

// The mean of the last 10 losses (one batch's loss is noisy).
double tail_mean(const std::vector<double>& losses) {
  double s = 0;
  for (size_t i = losses.size() - 10; i < losses.size(); ++i) s += losses[i];
  return s / 10;
}

// Checkpoints of a run: where, how often, whether it resumes, and a step
// (0-based, > 0) before which it stops as if killed.
struct checkpointing {
  std::string dir;
  int64_t every = 0;
  bool resume = false;
  int64_t stop_before = 0;
};

caf::expected<train_result> try_train_on(const std::string& dir, const xc_settings& xc, int64_t steps,
                                         const checkpointing& ck = {}) {
  train_options o;
  o.model.kind = "xc";
  o.model.hidden = {16};
  o.dataset = "xc:" + dir;
  o.steps = steps;
  o.batch = 16;
  o.adamw.lr = 5e-2;
  o.xc = xc;
  o.progress_seconds = 1e9;
  o.checkpoint_dir = ck.dir;
  o.checkpoint_every = ck.every;
  o.resume = ck.resume;
  auto data = load_training_data(o);
  if (!data) return data.error();
  local_parameter_store store;
  trainer t(o, **data, default_gemm_engine<float>(), store);
  if (ck.stop_before > 0)
    t.before_step = [&](int64_t step) { return step == ck.stop_before ? fail("stopped") : caf::error{}; };
  return t.run();
}

train_result train_on(const std::string& dir, const xc_settings& xc, int64_t steps) {
  auto res = try_train_on(dir, xc, steps);
  EXPECT_TRUE(res) << describe(res.error());
  return res ? *res : train_result{};
}

// The exactness test, in one process: with the active set forced to
// every neuron, sparse mode's losses are the dense full softmax's.
TEST(xc_model, sparse_with_every_neuron_active_follows_the_dense_softmax) {
  cleave::testing::scratch_dir dir;
  ASSERT_FALSE(write_xc(random_xc(800, 1), dir.file("train.txt")));
  ASSERT_FALSE(write_xc(random_xc(100, 2), dir.file("test.txt")));
  const auto sparse = train_on(dir.path(), all_active(), 50);
  const auto full = train_on(dir.path(), dense(), 50);
  ASSERT_EQ(sparse.losses.size(), 50u);
  ASSERT_EQ(full.losses.size(), 50u);
  for (size_t i = 0; i < 50; ++i)
    EXPECT_NEAR(sparse.losses[i], full.losses[i], 1e-4 * std::abs(full.losses[i])) << "step " << i + 1;
  EXPECT_LT(tail_mean(full.losses), 0.85 * full.losses.front()) << "nothing was learned";
  EXPECT_DOUBLE_EQ(sparse.active_fraction, 1.0);
  EXPECT_NEAR(sparse.p_at_1, full.p_at_1, 0.02);
}

// LSH sampling with a small active set still learns the task, and each step
// touches only a fraction of the output layer.
TEST(xc_model, sampled_softmax_learns_with_a_small_active_set) {
  cleave::testing::scratch_dir dir;
  ASSERT_FALSE(write_xc(random_xc(800, 1), dir.file("train.txt")));
  ASSERT_FALSE(write_xc(random_xc(100, 2), dir.file("test.txt")));
  xc_settings xc = small_active_set();
  const auto res = train_on(dir.path(), xc, 150);
  EXPECT_LT(res.active_fraction, 0.7);
  EXPECT_GT(res.p_at_1, 0.3);
  EXPECT_LT(tail_mean(res.losses), 0.7 * res.losses.front());
}

TEST(xc_model, untouched_rows_keep_their_weights_and_moments) {
  auto m = make_model(tiny_xc(), 3, default_gemm_engine<float>(), dense());
  ASSERT_TRUE(m) << describe(m.error());
  local_parameter_store store;
  ASSERT_FALSE(store.attach((*m)->parameters()));
  auto& in_w = (*m)->parameters().front();
  ASSERT_TRUE(in_w.row_sparse);
  const tensor before = in_w.value;
  auto b = a_batch(4);
  for (int64_t t = 1; t <= 2; ++t) {
    store.zero_grads();
    (*m)->train_batch(b);
    store.update(adamw_config{}, t, 1.0);
  }
  std::vector<uint8_t> seen(static_cast<size_t>(features), 0);
  for (int32_t f : b.feature_ids) seen[static_cast<size_t>(f)] = 1;
  ASSERT_FALSE(in_w.touched_rows.empty());
  for (int64_t r = 0; r < features; ++r)
    for (int64_t c = 0; c < in_w.value.cols(); ++c) {
      const bool changed = in_w.value.at(r, c) != before.at(r, c);
      if (!seen[static_cast<size_t>(r)]) {
        ASSERT_FALSE(changed) << "row " << r << " was not in the batch";
        ASSERT_EQ(in_w.adam_v.at(r, c), 0.0f);
      }
    }
  EXPECT_EQ(in_w.touched_rows.size(),
            static_cast<size_t>(std::count(seen.begin(), seen.end(), uint8_t{1})));
}

TEST(xc_model, bad_lsh_settings_are_refused_with_a_reason) {
  xc_settings xc;
  xc.lsh.hashes = 40;  // a DWTA code of 120 bits
  auto m = make_model(tiny_xc(), 3, default_gemm_engine<float>(), xc);
  ASSERT_FALSE(m);
  EXPECT_NE(describe(m.error()).find("lsh:"), std::string::npos) << describe(m.error());
}

}  // namespace

// -- model-lets on devices (D-SLIDE), over an in-process transport ------------

namespace {

// Devices as their model-let services, called directly; a device can be
// killed after a number of exchanges have reached it.
class local_fleet final : public modellet_transport {
 public:
  explicit local_fleet(int devices) : held_(static_cast<size_t>(devices)), alive_(held_.size(), true) {}
  std::vector<caf::expected<ml_frame>> exchange(std::vector<ml_request> requests) override {
    std::vector<caf::expected<ml_frame>> out;
    for (auto& r : requests) {
      const auto d = static_cast<size_t>(r.device);
      if (r.kind == edge_ml_forward && kill_at_forward > 0 && d == victim && --kill_at_forward == 0)
        alive_[d] = false;
      if (!alive_[d]) {
        out.emplace_back(fail("device " + std::to_string(d) + " is gone"));
        continue;
      }
      auto it = held_[d].try_emplace(r.slot, default_modellet_frame_cap).first;
      out.emplace_back(it->second.handle(r.kind, r.payload));
    }
    return out;
  }
  size_t victim = 0;
  int kill_at_forward = 0;  // > 0: the victim dies on its n-th forward

 private:
  std::vector<std::map<int32_t, modellet_service>> held_;
  std::vector<bool> alive_;
};

std::vector<device_profile> fleet_of(int n) {
  std::vector<device_profile> f(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    f[static_cast<size_t>(i)].flops = 1e9 * (1 + i % 2);  // uneven ranges
    f[static_cast<size_t>(i)].memory_bytes = 1ull << 30;
  }
  return f;
}

modellet_ps_options ps_options(const xc_settings& xc, int64_t copy_every) {
  modellet_ps_options o;
  o.sampling.lsh = xc.lsh;
  o.sampling.lsh.seed = 11;
  o.sampling.bucket_size = xc.bucket_size;
  o.sampling.schedule = xc.schedule;
  o.sampling.min_active = xc.min_active;
  o.sampling.seed = 12;
  o.copy_every = copy_every;
  return o;
}

}  // namespace

// The exactness test on 4 devices: every neuron forced active, the
// layer's ranges on devices merging their softmax stats at the PS, the
// losses of 50 steps are the single-process dense full softmax's.
TEST(xc_modellets, four_devices_every_neuron_active_follow_the_dense_softmax) {
  cleave::testing::scratch_dir dir;
  ASSERT_FALSE(write_xc(random_xc(800, 1), dir.file("train.txt")));
  ASSERT_FALSE(write_xc(random_xc(100, 2), dir.file("test.txt")));
  local_fleet devices(4);
  auto ps = std::make_shared<modellet_ps>(fleet_of(4), devices, ps_options(all_active(), 10));
  xc_settings xc = all_active();
  xc.modellets = ps;
  const auto spread = train_on(dir.path(), xc, 50);
  const auto full = train_on(dir.path(), dense(), 50);
  ASSERT_EQ(spread.losses.size(), 50u);
  ASSERT_EQ(ps->ranges().size(), 4u);
  for (size_t i = 0; i < 50; ++i)
    EXPECT_NEAR(spread.losses[i], full.losses[i], 1e-4 * std::abs(full.losses[i])) << "step " << i + 1;
  EXPECT_DOUBLE_EQ(spread.active_fraction, 1.0);
  EXPECT_NEAR(spread.p_at_1, full.p_at_1, 0.02);
  EXPECT_TRUE(ps->failures().empty());
}

// A device dies mid-training: its range comes back from the PS's copy on a
// survivor, the run finishes, and the cost is reported.
TEST(xc_modellets, a_lost_device_costs_the_updates_since_the_copy) {
  cleave::testing::scratch_dir dir;
  ASSERT_FALSE(write_xc(random_xc(800, 1), dir.file("train.txt")));
  ASSERT_FALSE(write_xc(random_xc(100, 2), dir.file("test.txt")));
  xc_settings xc = small_active_set();
  local_fleet calm(3);
  auto steady = std::make_shared<modellet_ps>(fleet_of(3), calm, ps_options(xc, 25));
  xc.modellets = steady;
  const auto base = train_on(dir.path(), xc, 150);
  local_fleet churn(3);
  churn.victim = 1;
  churn.kill_at_forward = 60;  // during step 60, 9 steps after the copy at 50
  auto ps = std::make_shared<modellet_ps>(fleet_of(3), churn, ps_options(xc, 25));
  xc.modellets = ps;
  const auto hit = train_on(dir.path(), xc, 150);
  ASSERT_EQ(hit.losses.size(), 150u);
  ASSERT_EQ(ps->failures().size(), 1u);
  const auto& f = ps->failures().front();
  EXPECT_EQ(f.device, 1);
  EXPECT_EQ(f.step, 60);
  EXPECT_EQ(f.lost_steps, 9);
  ASSERT_EQ(f.ranges.size(), 1u);
  EXPECT_NE(f.moved_to.front(), 1);
  EXPECT_EQ(f.lost_rows, 9 * (f.ranges.front().second - f.ranges.front().first));
  for (const auto& r : ps->ranges()) EXPECT_NE(r.device, 1);
  EXPECT_GT(hit.p_at_1, 0.3);
  EXPECT_GE(hit.p_at_1, 0.9 * base.p_at_1);
  EXPECT_LT(tail_mean(hit.losses), 0.7 * hit.losses.front());
}

// -- model-lets on emulated device actors, paced and not ----------------------

namespace {

struct actor_config : caf::actor_system_config {
  actor_config() { add_cleave_message_types(*this); }
};

// A planner that welcomes every device and keeps no fleet: the model-let
// frames go to the devices directly, as the PS's transport sends them.
caf::behavior welcoming_planner() {
  return {[](join_atom, const join_request& r) {
    return caf::make_message(welcome_atom::value, r.preferred_id, caf::actor{});
  }};
}

struct paced_run {
  std::vector<double> losses;
  double seconds = 0;       // the training steps' wall time
  double link_seconds = 0;  // what the transport accounts of the paced links
};

// 3 emulated device actors on slow links (so pacing shows), paced or not,
// holding small_active_set()'s model-lets over the actor transport.
paced_run on_device_actors(const std::string& dir, bool paced) {
  actor_config cfg;
  caf::actor_system sys{cfg};
  auto planner = sys.spawn(welcoming_planner);
  std::vector<device_profile> fleet(3);
  std::vector<caf::actor> devices;
  for (int i = 0; i < 3; ++i) {
    auto& p = fleet[static_cast<size_t>(i)];
    p = {"slow", 1e9, 1ull << 30, 2e6, 1e6, 0.002};
    device_options o;
    o.profile = p;
    o.paced = paced;
    o.fleet_index = i;
    devices.push_back(sys.spawn(device_actor, o, planner));
  }
  actor_modellet_transport transport(sys, devices, std::chrono::seconds(30), paced ? fleet : std::vector<device_profile>{});
  xc_settings xc = small_active_set();
  auto ps = std::make_shared<modellet_ps>(fleet, transport, ps_options(xc, 25));
  xc.modellets = ps;
  paced_run out;
  const auto res = train_on(dir, xc, 40);
  out.losses = res.losses;
  for (double s : res.step_seconds) out.seconds += s;
  out.link_seconds = transport.time().link_seconds;
  for (auto& d : devices) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(planner, caf::exit_reason::user_shutdown);
  return out;
}

}  // namespace

// Pacing moves time only: emulated devices that hold their model-let answers
// for their links' time give the unpaced run's losses bit for bit, and the
// paced steps take at least the link time the transport accounts.
TEST(xc_modellets, paced_devices_follow_the_unpaced_trajectory_and_take_their_link_time) {
  cleave::testing::scratch_dir dir;
  ASSERT_FALSE(write_xc(random_xc(800, 1), dir.file("train.txt")));
  ASSERT_FALSE(write_xc(random_xc(100, 2), dir.file("test.txt")));
  const auto unpaced = on_device_actors(dir.path(), false);
  const auto paced = on_device_actors(dir.path(), true);
  ASSERT_EQ(paced.losses.size(), 40u);
  ASSERT_EQ(unpaced.losses.size(), 40u);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(paced.losses[i], unpaced.losses[i]) << "step " << i + 1;
  EXPECT_EQ(unpaced.link_seconds, 0);
  // 40 steps of 3 exchanges at least (forward, grads, update), each 2 x 2 ms of latency.
  EXPECT_GT(paced.link_seconds, 40 * 3 * 0.004);
  EXPECT_GE(paced.seconds, 0.9 * paced.link_seconds);
  EXPECT_GT(paced.seconds, unpaced.seconds + 0.5 * paced.link_seconds);
}

// Issue 18's "a sparse run checkpoints and resumes bit for bit" on devices:
// 60 steps on 4 devices (LSH sampling, a rehash every 10 steps and a
// rebuild every 30), one run uninterrupted, the other stopped after its
// checkpoint at step 30 and resumed on a fresh fleet. Steps 31 to 60 have
// the same losses and step 60's checkpoint the same weights and moments, bit
// for bit: the checkpoint holds the model-lets' copy taken at step 30, and
// each device rebuilds its tables from it as of step 30.
TEST(xc_modellets, a_checkpointed_run_resumes_bit_for_bit) {
  cleave::testing::scratch_dir dir, whole, parts;
  ASSERT_FALSE(write_xc(random_xc(800, 1), dir.file("train.txt")));
  ASSERT_FALSE(write_xc(random_xc(100, 2), dir.file("test.txt")));
  auto on_devices = [](local_fleet& devices) {
    xc_settings xc = small_active_set();
    xc.modellets = std::make_shared<modellet_ps>(fleet_of(4), devices, ps_options(xc, 25));
    return xc;
  };
  local_fleet a(4);
  auto uninterrupted = try_train_on(dir.path(), on_devices(a), 60, {whole.path(), 30});
  ASSERT_TRUE(uninterrupted) << describe(uninterrupted.error());
  local_fleet b(4);
  auto first = try_train_on(dir.path(), on_devices(b), 60, {parts.path(), 30, false, 30});
  ASSERT_FALSE(first);  // stopped before step 31, after the checkpoint at step 30
  local_fleet c(4);
  auto resumed = try_train_on(dir.path(), on_devices(c), 60, {parts.path(), 30, true});
  ASSERT_TRUE(resumed) << describe(resumed.error());
  EXPECT_EQ(resumed->resumed_from_step, 30);
  ASSERT_EQ(uninterrupted->losses.size(), 60u);
  ASSERT_EQ(resumed->losses.size(), 30u);
  for (size_t i = 0; i < 30; ++i)
    EXPECT_EQ(resumed->losses[i], uninterrupted->losses[30 + i]) << "step " << 31 + i;
  EXPECT_EQ(resumed->p_at_1, uninterrupted->p_at_1);

  auto last = [](const std::string& d) { return read_checkpoint(list_checkpoints(d).front()); };
  auto want = last(whole.path()), got = last(parts.path());
  ASSERT_TRUE(want && got);
  ASSERT_EQ(want->step, 60u);
  ASSERT_EQ(got->step, 60u);
  ASSERT_EQ(got->parameters.size(), want->parameters.size());
  auto same = [](const tensor& x, const tensor& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), sizeof(float) * x.size()) == 0;
  };
  for (size_t i = 0; i < want->parameters.size(); ++i) {
    const auto &w = want->parameters[i], &g = got->parameters[i];
    EXPECT_TRUE(same(w.value, g.value) && same(w.adam_m, g.adam_m) && same(w.adam_v, g.adam_v)) << w.name;
  }
  // The devices' layer is in the checkpoints, as of their steps: out.w at
  // step 60 is not the one at step 30 (the copy every 25 steps is at 50).
  const auto files = list_checkpoints(whole.path());
  ASSERT_EQ(files.size(), 2u);
  auto at_30 = read_checkpoint(files.back());
  ASSERT_TRUE(at_30);
  ASSERT_EQ(at_30->step, 30u);
  for (size_t i = 0; i < want->parameters.size(); ++i) {
    if (want->parameters[i].name == "out.w")
      EXPECT_FALSE(same(want->parameters[i].value, at_30->parameters[i].value));
  }
}
