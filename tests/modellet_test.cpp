// Model-lets (D-SLIDE), the pure core: ranges of the output layer on
// "devices" whose partial softmax stats merge at the PS give the one-range
// result; the combiner refuses malformed answers; the split follows speed
// and memory.

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "actors/planner/modellet_split.hpp"
#include "kernels/random.hpp"
#include "schema/errors.hpp"
#include "kernels/sparse/modellet.hpp"
#include "kernels/sparse/softmax_combine.hpp"

using namespace cleave;

namespace {

constexpr int64_t hidden = 16;
constexpr int32_t labels_n = 97;

struct layer {
  tensor w, b;
};

layer random_layer(uint64_t seed) {
  rng r(seed);
  layer l;
  l.w.resize(labels_n, hidden);
  fill_normal(l.w, 0.3, r);
  l.b.resize(labels_n, 1);
  fill_normal(l.b, 0.1, r);
  return l;
}

modellet_state slice(const layer& l, int32_t begin, int32_t end) {
  modellet_state s;
  s.begin = begin;
  s.end = end;
  s.hidden = hidden;
  const int64_t rows = end - begin;
  s.w.resize(rows, hidden);
  std::copy(l.w.data() + begin * hidden, l.w.data() + end * hidden, s.w.data());
  s.b.resize(rows, 1);
  std::copy(l.b.data() + begin, l.b.data() + end, s.b.data());
  for (tensor* t : {&s.m_w, &s.v_w}) {
    t->resize(rows, hidden);
    t->zero();
  }
  for (tensor* t : {&s.m_b, &s.v_b}) {
    t->resize(rows, 1);
    t->zero();
  }
  return s;
}

struct batch_data {
  tensor h;
  std::vector<int64_t> offsets;
  std::vector<int32_t> ids;
  label_rows rows() const { return {offsets.data(), ids.data(), h.rows()}; }
};

batch_data random_batch(int64_t n, uint64_t seed) {
  rng r(seed);
  batch_data b;
  b.h.resize(n, hidden);
  for (int64_t i = 0; i < b.h.size(); ++i) b.h[i] = static_cast<float>(std::max(0.0, r.normal()));
  b.offsets.push_back(0);
  for (int64_t s = 0; s < n; ++s) {
    const int k = static_cast<int>(r.below(3));  // 0 to 2 labels: a sample may have none
    std::vector<int32_t> ls;
    while (static_cast<int>(ls.size()) < k) {
      const auto l = static_cast<int32_t>(r.below(labels_n));
      if (std::find(ls.begin(), ls.end(), l) == ls.end()) ls.push_back(l);
    }
    std::sort(ls.begin(), ls.end());
    b.ids.insert(b.ids.end(), ls.begin(), ls.end());
    b.offsets.push_back(static_cast<int64_t>(b.ids.size()));
  }
  return b;
}

// One training step over model-lets: forward everywhere, combine, backward,
// clip over the global norm, update. Returns the mean loss; dh is the sum of
// the ranges' parts.
double step(std::vector<modellet>& mls, const batch_data& b, int64_t t, tensor& dh) {
  std::vector<modellet_scores> scores;
  for (auto& m : mls) scores.push_back(m.forward(b.h, b.rows(), t - 1));
  std::vector<const modellet_scores*> parts;
  for (auto& s : scores) parts.push_back(&s);
  combined_softmax c;
  const float scale = 1.0f / static_cast<float>(b.h.rows());
  EXPECT_EQ(combine_softmax(parts, b.rows(), scale, c), "");
  dh.resize(b.h.rows(), hidden);
  dh.zero();
  double sq = 0;
  for (size_t i = 0; i < mls.size(); ++i) {
    tensor part;
    double s = 0;
    EXPECT_EQ(mls[i].backward(c.dlogits[i], part, s), "");
    sq += s;
    for (int64_t k = 0; k < dh.size(); ++k) dh[k] += part[k];
  }
  adamw_config cfg;
  for (auto& m : mls) m.update(cfg, t, clip_scale(std::sqrt(sq), cfg.clip_norm));
  return c.loss_sum / static_cast<double>(b.h.rows());
}

std::vector<modellet> make(const layer& l, const std::vector<int32_t>& cuts, int32_t min_active) {
  modellet_sampling s;
  s.lsh.family = lsh_family::simhash;
  s.lsh.hashes = 4;
  s.lsh.tables = 8;
  s.bucket_size = 16;
  s.schedule = {2, 4, 1.0};
  s.seed = 7;
  std::vector<modellet> out;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    s.min_active = min_active < 0 ? cuts[i + 1] - cuts[i] : min_active;
    out.emplace_back(slice(l, cuts[i], cuts[i + 1]), s);
  }
  return out;
}

}  // namespace

TEST(modellet, every_neuron_active_four_ranges_match_one) {
  const layer l = random_layer(1);
  auto one = make(l, {0, labels_n}, -1);
  auto four = make(l, {0, 10, 41, 42, labels_n}, -1);
  for (int64_t t = 1; t <= 6; ++t) {
    const batch_data b = random_batch(9, 100 + static_cast<uint64_t>(t));
    tensor dh1, dh4;
    const double l1 = step(one, b, t, dh1);
    const double l4 = step(four, b, t, dh4);
    EXPECT_NEAR(l4, l1, 1e-6 * std::abs(l1)) << "step " << t;
    for (int64_t k = 0; k < dh1.size(); ++k) ASSERT_NEAR(dh4[k], dh1[k], 1e-6) << "step " << t;
  }
  for (const auto& m : four)
    for (int64_t r = 0; r < m.end() - m.begin(); ++r)
      for (int64_t c = 0; c < hidden; ++c)
        ASSERT_NEAR(m.state().w.at(r, c), one[0].state().w.at(m.begin() + r, c), 1e-6);
}

TEST(modellet, lsh_ranges_force_their_labels_and_learn) {
  const layer l = random_layer(2);
  auto mls = make(l, {0, 30, 60, labels_n}, 3);
  double first = 0, last = 0;
  const batch_data b = random_batch(12, 5);
  for (int64_t t = 1; t <= 30; ++t) {
    tensor dh;
    const double loss = step(mls, b, t, dh);
    if (t == 1) first = loss;
    last = loss;
  }
  EXPECT_LT(last, first);
  // A step touches a fraction of each range, not all of it.
  int64_t updated = 0;
  for (const auto& m : mls) updated += m.rows_updated();
  EXPECT_LT(updated, 30 * labels_n);
}

TEST(modellet, a_step_redone_after_a_failure_starts_clean) {
  const layer l = random_layer(3);
  auto a = make(l, {0, labels_n}, -1), b = make(l, {0, labels_n}, -1);
  const batch_data x = random_batch(5, 9);
  // b runs forward and backward once, as if the exchange then failed, and
  // redoes the step: its gradients must be the step's once, not twice.
  {
    auto s = b[0].forward(x.h, x.rows(), 0);
    combined_softmax c;
    ASSERT_EQ(combine_softmax({&s}, x.rows(), 0.2f, c), "");
    tensor dh;
    double sq;
    ASSERT_EQ(b[0].backward(c.dlogits[0], dh, sq), "");
  }
  tensor d1, d2;
  step(a, x, 1, d1);
  step(b, x, 1, d2);
  for (int64_t k = 0; k < a[0].state().w.size(); ++k) ASSERT_EQ(a[0].state().w[k], b[0].state().w[k]);
}

TEST(modellet, backward_refuses_a_wrong_count) {
  const layer l = random_layer(4);
  auto m = make(l, {0, labels_n}, -1);
  const batch_data x = random_batch(3, 1);
  m[0].forward(x.h, x.rows(), 0);
  tensor dh;
  double sq;
  EXPECT_NE(m[0].backward(std::vector<float>(5), dh, sq), "");
}

TEST(softmax_combine, refuses_malformed_parts) {
  const layer l = random_layer(5);
  auto mls = make(l, {0, 50, labels_n}, -1);
  batch_data x = random_batch(4, 3);
  x.ids = {1, 60, 2};
  x.offsets = {0, 1, 2, 3, 3};
  auto s0 = mls[0].forward(x.h, x.rows(), 0), s1 = mls[1].forward(x.h, x.rows(), 0);
  combined_softmax c;
  ASSERT_EQ(combine_softmax({&s0, &s1}, x.rows(), 1.0f, c), "");
  // A label in no part (the second range missing).
  EXPECT_NE(combine_softmax({&s0}, x.rows(), 1.0f, c).find("no model-let"), std::string::npos);
  // Two parts over the same range.
  EXPECT_NE(combine_softmax({&s0, &s0, &s1}, x.rows(), 1.0f, c).find("overlap"), std::string::npos);
  // Counts that do not add up, ids out of order, too few samples.
  auto bad = s1;
  bad.offsets.back() += 1;
  EXPECT_NE(combine_softmax({&s0, &bad}, x.rows(), 1.0f, c), "");
  bad = s1;
  std::swap(bad.ids[0], bad.ids[1]);
  EXPECT_NE(combine_softmax({&s0, &bad}, x.rows(), 1.0f, c).find("ascending"), std::string::npos);
  bad = s1;
  bad.offsets.pop_back();
  bad.stats.pop_back();
  EXPECT_NE(combine_softmax({&s0, &bad}, x.rows(), 1.0f, c).find("samples"), std::string::npos);
}

TEST(modellet_split, proportional_to_speed) {
  std::vector<device_profile> fleet(3);
  const double speeds[] = {1e9, 2e9, 1e9};
  for (size_t i = 0; i < 3; ++i) {
    fleet[i].flops = speeds[i];
    fleet[i].memory_bytes = 1ull << 30;
  }
  auto split = modellet_split(fleet, 1000, 100);
  ASSERT_TRUE(split) << describe(split.error());
  ASSERT_EQ(split->size(), 3u);
  EXPECT_EQ((*split)[0].begin, 0);
  EXPECT_EQ((*split)[0].end - (*split)[0].begin, 250);
  EXPECT_EQ((*split)[1].end - (*split)[1].begin, 500);
  EXPECT_EQ((*split)[2].end, 1000);
  for (size_t i = 1; i < 3; ++i) EXPECT_EQ((*split)[i].begin, (*split)[i - 1].end);
}

TEST(modellet_split, memory_caps_a_fast_device) {
  std::vector<device_profile> fleet(3);
  for (auto& d : fleet) {
    d.flops = 1e9;
    d.memory_bytes = 1ull << 30;
  }
  fleet[1].flops = 10e9;
  fleet[1].memory_bytes = 2 * 100 * 200;  // half of it holds 200 neurons of 100 bytes
  auto split = modellet_split(fleet, 1001, 100);
  ASSERT_TRUE(split);
  EXPECT_EQ((*split)[1].end - (*split)[1].begin, 200);
  EXPECT_EQ((*split)[0].end - (*split)[0].begin + (*split)[2].end - (*split)[2].begin, 801);
  EXPECT_LE(std::abs(((*split)[0].end - (*split)[0].begin) - ((*split)[2].end - (*split)[2].begin)), 1);
}

TEST(modellet_split, refuses_a_fleet_too_small) {
  std::vector<device_profile> fleet(2);
  for (auto& d : fleet) {
    d.flops = 1e9;
    d.memory_bytes = 2000;
  }
  EXPECT_FALSE(modellet_split(fleet, 1000, 100));
  EXPECT_FALSE(modellet_split({}, 1000, 100));
  fleet[0].flops = 0;
  fleet[0].memory_bytes = 1ull << 30;
  EXPECT_FALSE(modellet_split(fleet, 10, 100));
}

TEST(modellet_split, bytes_per_neuron) {
  EXPECT_EQ(modellet_bytes_per_neuron(128, 50), 5u * 129 * 4 + 50 * 4);
}
