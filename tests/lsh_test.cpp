// The LSH kernels of sparse mode: each family's collision rate against its
// formula on random vectors, densification, the bucket policies, active sets,
// the refresh schedule and determinism under the seed.

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/lsh/lsh_hash.hpp"
#include "kernels/lsh/lsh_index.hpp"
#include "kernels/lsh/lsh_tables.hpp"
#include "kernels/random.hpp"

using namespace cleave;

namespace {

std::vector<float> gaussian(int64_t dim, rng& r) {
  std::vector<float> v(static_cast<size_t>(dim));
  for (auto& x : v) x = static_cast<float>(r.normal());
  return v;
}

// y = x + noise * a fresh Gaussian: a pair at a chosen similarity.
std::vector<float> near(const std::vector<float>& x, double noise, rng& r) {
  auto y = x;
  for (auto& v : y) v += static_cast<float>(noise * r.normal());
  return y;
}

// The fraction of tables (one hash each) in which x and y share a code.
double collision_rate(const lsh_config& cfg, const std::vector<float>& x, const std::vector<float>& y) {
  lsh_hash h(cfg, static_cast<int64_t>(x.size()));
  std::vector<uint32_t> cx(static_cast<size_t>(cfg.tables)), cy(cx.size());
  h.codes(x.data(), cx.data());
  h.codes(y.data(), cy.data());
  int same = 0;
  for (size_t t = 0; t < cx.size(); ++t) same += cx[t] == cy[t];
  return static_cast<double>(same) / cfg.tables;
}

lsh_config one_hash_per_table(lsh_family family) {
  lsh_config cfg;
  cfg.family = family;
  cfg.hashes = 1;
  cfg.tables = 4096;
  cfg.bin_size = 4;
  cfg.simhash_sparsity = 1;
  return cfg;
}


// For pairs at several distances: the family's collision rate over 4096
// one-hash tables is its formula's probability, within 5 sigma of sampling
// noise plus `bias` (what the formula leaves out).
void expect_collision_rates(lsh_family family, int64_t dim, uint64_t seed, double bias,
                            double (*formula)(const float*, const float*, int64_t, const lsh_config&)) {
  rng r(seed);
  for (double noise : {0.1, 0.5, 1.0, 3.0}) {
    const auto x = gaussian(dim, r);
    const auto y = near(x, noise, r);
    auto cfg = one_hash_per_table(family);
    cfg.seed = seed;
    const double p = formula(x.data(), y.data(), dim, cfg);
    const double sigma = std::sqrt(p * (1 - p) / cfg.tables);
    EXPECT_NEAR(collision_rate(cfg, x, y), p, 5 * sigma + bias) << to_string(family) << " noise " << noise;
  }
}

}  // namespace

TEST(lsh, dwta_collides_as_its_formula_says) {
  expect_collision_rates(lsh_family::dwta, 32, 11, 1e-3,
                         [](const float* x, const float* y, int64_t dim, const lsh_config& cfg) {
                           return dwta_collision_probability(x, y, dim, cfg.bin_size);
                         });
  // The formula itself: a vector always collides with itself, and with its
  // negation never (distinct values have no ties).
  rng r(11);
  const auto x = gaussian(32, r);
  EXPECT_NEAR(dwta_collision_probability(x.data(), x.data(), 32, 4), 1.0, 1e-12);
  std::vector<float> neg(x.size());
  std::transform(x.begin(), x.end(), neg.begin(), [](float v) { return -v; });
  EXPECT_NEAR(dwta_collision_probability(x.data(), neg.data(), 32, 4), 0.0, 1e-12);
}

TEST(lsh, dwta_ties_go_to_the_later_coordinate_and_zeros_never_win) {
  // Equal values everywhere hash as values rising with the coordinate (a
  // tie goes to the later one), positive or negative; a vector of ties
  // differs from one falling with the coordinate.
  const int64_t dim = 64;
  lsh_config cfg;
  cfg.tables = 20;
  lsh_hash h(cfg, dim);
  auto codes_of = [&](auto value) {
    std::vector<float> x(static_cast<size_t>(dim));
    for (int64_t i = 0; i < dim; ++i) x[static_cast<size_t>(i)] = value(i);
    std::vector<uint32_t> out(static_cast<size_t>(cfg.tables));
    h.codes(x.data(), out.data());
    return out;
  };
  EXPECT_EQ(codes_of([](int64_t) { return 1.f; }), codes_of([](int64_t i) { return 1.f + i; }));
  EXPECT_EQ(codes_of([](int64_t) { return -2.f; }), codes_of([](int64_t i) { return -100.f + i; }));
  EXPECT_NE(codes_of([](int64_t) { return 1.f; }), codes_of([](int64_t i) { return 100.f - i; }));
  // Half the coordinates zero and the others negative: the zeros, larger,
  // still never win, so zeroing them changes nothing.
  EXPECT_EQ(codes_of([](int64_t i) { return i % 2 ? 0.f : -1.f - i; }),
            codes_of([](int64_t i) { return i % 2 ? -0.f : -1.f - i; }));
  EXPECT_NE(codes_of([](int64_t i) { return i % 2 ? 0.f : -1.f - i; }),
            codes_of([](int64_t i) { return i % 2 ? -0.5f : -1.f - i; }));
}

TEST(lsh, simhash_collides_at_one_minus_angle_over_pi) {
  // +-1 projections are not Gaussian ones: 1% allowed beyond the sampling noise.
  expect_collision_rates(lsh_family::simhash, 256, 12, 0.01,
                         [](const float* x, const float* y, int64_t dim, const lsh_config&) {
                           return simhash_collision_probability(x, y, dim);
                         });
}

TEST(lsh, sparse_simhash_still_separates_near_from_far) {
  rng r(13);
  const int64_t dim = 256;
  auto cfg = one_hash_per_table(lsh_family::simhash);
  cfg.simhash_sparsity = 3;
  const auto x = gaussian(dim, r);
  EXPECT_GT(collision_rate(cfg, x, near(x, 0.2, r)), collision_rate(cfg, x, near(x, 2.0, r)) + 0.2);
}

TEST(lsh, densified_dwta_hashes_sparse_vectors) {
  rng r(14);
  const int64_t dim = 128;
  lsh_config cfg;
  cfg.hashes = 4;
  cfg.tables = 64;
  cfg.bin_size = 8;
  lsh_hash h(cfg, dim);
  // 95% zeros, as after a ReLU: most bins are empty.
  std::vector<float> x(static_cast<size_t>(dim), 0.0f);
  for (int i = 0; i < 6; ++i) x[static_cast<size_t>(r.below(dim))] = static_cast<float>(1 + r.uniform());
  std::vector<uint32_t> a(64), b(64);
  h.codes(x.data(), a.data());
  h.codes(x.data(), b.data());
  EXPECT_EQ(a, b);
  std::sort(a.begin(), a.end());
  EXPECT_GT(std::unique(a.begin(), a.end()) - a.begin(), 8) << "empty bins must borrow, not all hash alike";
  // A near copy (one more coordinate) still collides far more than a stranger.
  auto y = x;
  y[static_cast<size_t>(r.below(dim))] += 0.5f;
  std::vector<float> z(static_cast<size_t>(dim), 0.0f);
  for (int i = 0; i < 6; ++i) z[static_cast<size_t>(r.below(dim))] = static_cast<float>(1 + r.uniform());
  auto one_hash = cfg;
  one_hash.hashes = 1;
  one_hash.tables = 2048;
  EXPECT_GT(collision_rate(one_hash, x, y), collision_rate(one_hash, x, z) + 0.3);
  // All zeros: no winner anywhere, a code all the same, no crash.
  std::vector<float> zero(static_cast<size_t>(dim), 0.0f);
  h.codes(zero.data(), a.data());
  EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](uint32_t c) { return c == 0; }));
}

TEST(lsh, codes_follow_the_seed) {
  rng r(15);
  const auto x = gaussian(64, r);
  for (auto family : {lsh_family::dwta, lsh_family::simhash}) {
    lsh_config cfg;
    cfg.family = family;
    cfg.seed = 3;
    std::vector<uint32_t> a(50), b(50), c(50);
    lsh_hash(cfg, 64).codes(x.data(), a.data());
    lsh_hash(cfg, 64).codes(x.data(), b.data());
    cfg.seed = 4;
    lsh_hash(cfg, 64).codes(x.data(), c.data());
    EXPECT_EQ(a, b) << to_string(family);
    EXPECT_NE(a, c) << to_string(family);
  }
}

TEST(lsh, bad_configurations_are_refused_with_the_reason) {
  auto refused = [](lsh_config cfg, int64_t dim, const char* needle) {
    try {
      check_lsh_config(cfg, dim);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted a config that should be refused: " << needle;
  };
  lsh_config cfg;
  cfg.bin_size = 6;
  refused(cfg, 64, "power of two");
  cfg.bin_size = 16;
  cfg.hashes = 9;
  refused(cfg, 64, "more than 32");
  cfg.hashes = 2;
  refused(cfg, 8, "larger than the dimension");
  refused(cfg, (int64_t{1} << 24) + 1, "at most 2^24 coordinates");
  cfg.tables = 0;
  refused(cfg, 64, "must be positive");
  lsh_config sim;
  sim.family = lsh_family::simhash;
  sim.hashes = 33;
  refused(sim, 64, "at most 32");
  EXPECT_THROW(lsh_tables(4, 0, bucket_policy::fifo), std::invalid_argument);
}

TEST(lsh, fifo_buckets_keep_the_newest) {
  lsh_tables t(2, 4, bucket_policy::fifo);
  std::vector<int32_t> ids(10);
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<uint32_t> codes(20, 7);  // table 0: code 7, table 1: code 9
  std::fill(codes.begin() + 10, codes.end(), 9u);
  t.build(ids.data(), codes.data(), 10, 1);
  auto kept = t.bucket(0, 7);
  EXPECT_EQ(kept, (std::vector<int32_t>{8, 9, 6, 7}));  // the ring's slots: 8 and 9 replaced 4 and 5
  EXPECT_EQ(t.bucket(1, 9).size(), 4u);
  EXPECT_TRUE(t.bucket(0, 9).empty());
  t.build(ids.data(), codes.data(), 0, 1);
  EXPECT_TRUE(t.bucket(0, 7).empty());
}

TEST(lsh, reservoir_buckets_keep_every_id_alike) {
  // 1000 ids into a bucket of 10, over 2000 seeds: each id stays with
  // probability 1/100, early or late.
  const int ids = 1000, cap = 10, runs = 2000;
  std::vector<int> kept(ids, 0);
  const uint32_t code = 1;
  std::vector<int32_t> offered(ids);
  std::iota(offered.begin(), offered.end(), 0);
  const std::vector<uint32_t> codes(ids, code);
  lsh_tables t(1, cap, bucket_policy::reservoir);
  for (int s = 0; s < runs; ++s) {
    t.build(offered.data(), codes.data(), ids, static_cast<uint64_t>(s));
    for (int32_t id : t.bucket(0, code)) ++kept[static_cast<size_t>(id)];
  }
  const double expected = static_cast<double>(runs) * cap / ids;  // 20 per id
  const double first = std::accumulate(kept.begin(), kept.begin() + 100, 0.0) / 100;
  const double last = std::accumulate(kept.end() - 100, kept.end(), 0.0) / 100;
  // The mean of 100 ids has a standard deviation near sqrt(20 / 100) = 0.45.
  EXPECT_NEAR(first, expected, 2.5);
  EXPECT_NEAR(last, expected, 2.5);
}

// The buckets as SLIDE fills them, one id at a time into a map of vectors:
// what a flat build must reproduce slot for slot.
std::map<uint32_t, std::vector<int32_t>> offered_one_at_a_time(const std::vector<int32_t>& ids,
                                                               const uint32_t* codes, size_t cap,
                                                               bucket_policy policy, rng draw) {
  struct bucket {
    std::vector<int32_t> ids;
    uint64_t seen = 0;
    size_t next = 0;
  };
  std::map<uint32_t, bucket> table;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto& b = table[codes[i]];
    ++b.seen;
    if (b.ids.size() < cap) {
      b.ids.push_back(ids[i]);
    } else if (policy == bucket_policy::fifo) {
      b.ids[b.next] = ids[i];
      b.next = (b.next + 1) % cap;
    } else {
      const uint64_t slot = draw.below(b.seen);
      if (slot < cap) b.ids[slot] = ids[i];
    }
  }
  std::map<uint32_t, std::vector<int32_t>> out;
  for (auto& [code, b] : table) out[code] = b.ids;
  return out;
}

TEST(lsh, a_built_table_holds_what_offering_one_id_at_a_time_gives) {
  // Ids in a shuffled order, codes from a small space (full buckets) and a
  // wide one (codes above 2^22, several radix digits), both policies.
  const int64_t count = 3000;
  const int32_t tables = 3;
  const uint64_t seed = 42;
  rng r(5);
  std::vector<int32_t> ids(static_cast<size_t>(count));
  const auto perm = permutation(count, 9);
  for (int64_t i = 0; i < count; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(perm[static_cast<size_t>(i)] * 3);
  std::vector<uint32_t> codes(static_cast<size_t>(count * tables));
  for (int64_t i = 0; i < count; ++i) {
    codes[static_cast<size_t>(i)] = static_cast<uint32_t>(r.below(40));
    codes[static_cast<size_t>(count + i)] = static_cast<uint32_t>(r.next()) | 0x80000000u;
    codes[static_cast<size_t>(2 * count + i)] = static_cast<uint32_t>(r.below(5)) << 23;
  }
  for (auto policy : {bucket_policy::fifo, bucket_policy::reservoir}) {
    lsh_tables t(tables, 16, policy);
    t.build(ids.data(), codes.data(), count, seed);
    for (int32_t k = 0; k < tables; ++k) {
      rng draw(derive_seed(derive_seed(seed, 0xb0c), static_cast<uint64_t>(k)));
      const auto want = offered_one_at_a_time(ids, codes.data() + k * count, 16, policy, draw);
      for (const auto& [code, bucket] : want) {
        EXPECT_EQ(t.bucket(k, code), bucket) << to_string(policy) << " table " << k << " code " << code;
        // 1000 names no bucket in any table: for_each walks this one alone.
        std::vector<uint32_t> probe(static_cast<size_t>(tables), 1000);
        probe[static_cast<size_t>(k)] = code;
        std::vector<int32_t> walked;
        t.for_each(probe.data(), [&](int32_t id) { walked.push_back(id); });
        EXPECT_EQ(walked, bucket);
      }
    }
    EXPECT_TRUE(t.bucket(1, 7).empty());
  }
}

TEST(lsh, active_set_is_buckets_plus_labels_topped_up) {
  lsh_tables t(2, 8, bucket_policy::fifo);
  const uint32_t a[2] = {1, 2};
  const std::vector<int32_t> ids = {3, 40, 17};
  const std::vector<uint32_t> codes = {1, 1, 5,   // table 0
                                       2, 2, 2};  // table 1: 17 shares a's bucket
  t.build(ids.data(), codes.data(), 3, 1);
  std::vector<uint8_t> marks(100, 0);
  rng draw(2);
  auto set = active_set(t, a, {99}, 100, 0, draw, marks);
  EXPECT_EQ(set, (std::vector<int32_t>{3, 17, 40, 99}));
  set = active_set(t, a, {99}, 100, 30, draw, marks);
  EXPECT_EQ(set.size(), 30u);
  EXPECT_TRUE(std::is_sorted(set.begin(), set.end()));
  EXPECT_EQ(std::adjacent_find(set.begin(), set.end()), set.end());
  for (int32_t must : {3, 17, 40, 99}) EXPECT_TRUE(std::binary_search(set.begin(), set.end(), must));
  // Asking for more than half the layer, or all of it, still ends.
  EXPECT_EQ(active_set(t, a, {}, 100, 90, draw, marks).size(), 90u);
  EXPECT_EQ(active_set(t, a, {}, 100, 500, draw, marks).size(), 100u);
  EXPECT_TRUE(std::all_of(marks.begin(), marks.end(), [](uint8_t m) { return m == 0; }));
  EXPECT_THROW(active_set(t, a, {100}, 100, 0, draw, marks), std::out_of_range);
}

TEST(lsh, an_index_finds_the_neuron_that_matches_the_input) {
  rng r(16);
  const int64_t dim = 64;
  const int32_t neurons = 2000;
  std::vector<float> w(static_cast<size_t>(neurons * dim));
  for (auto& v : w) v = static_cast<float>(r.normal());
  for (auto family : {lsh_family::dwta, lsh_family::simhash}) {
    lsh_config cfg;
    cfg.family = family;
    cfg.hashes = family == lsh_family::dwta ? 3 : 9;
    cfg.tables = 16;
    lsh_index index(cfg, dim, neurons, 64, bucket_policy::fifo);
    index.rehash(w.data(), dim);
    std::vector<uint8_t> marks(neurons, 0);
    rng draw(1);
    int found = 0;
    size_t total = 0;
    for (int32_t j = 0; j < 50; ++j) {
      auto set = index.active(w.data() + j * dim, {}, 0, draw, marks);
      found += std::binary_search(set.begin(), set.end(), j);
      total += set.size();
    }
    EXPECT_EQ(found, 50) << to_string(family);  // a neuron's own weights collide in every table
    EXPECT_LT(total / 50, static_cast<size_t>(neurons / 4)) << to_string(family) << ": the set must be sparse";
    const auto gen = index.generation();
    index.rebuild(w.data(), dim);
    EXPECT_EQ(index.generation(), gen + 1);
  }
}

TEST(lsh, refresh_schedule_rehashes_and_rebuilds_on_time) {
  lsh_schedule s;
  s.rehash_every = 5;
  s.rebuild_every = 20;
  std::vector<int64_t> rehash, rebuild;
  for (int64_t step = 0; step <= 40; ++step) {
    const auto due = refresh_due(s, step);
    if (due == lsh_refresh::rehash) rehash.push_back(step);
    if (due == lsh_refresh::rebuild) rebuild.push_back(step);
  }
  EXPECT_EQ(rehash, (std::vector<int64_t>{5, 10, 15, 25, 30, 35}));
  EXPECT_EQ(rebuild, (std::vector<int64_t>{20, 40}));
  s.rehash_every = 0;
  s.rebuild_every = 10;
  s.rebuild_growth = 2;
  rebuild.clear();
  for (int64_t step = 0; step <= 200; ++step)
    if (refresh_due(s, step) == lsh_refresh::rebuild) rebuild.push_back(step);
  EXPECT_EQ(rebuild, (std::vector<int64_t>{10, 30, 70, 150}));
  s.rebuild_growth = 0.5;
  EXPECT_THROW(refresh_due(s, 1), std::invalid_argument);
}

// A run resumed from a checkpoint taken at a refresh step rebuilds the tables
// the uninterrupted run had, from that step's weights alone (sparse mode's
// bit-for-bit resume rests on it).
TEST(lsh, resume_at_a_refresh_step_gives_the_uninterrupted_tables) {
  const int64_t dim = 32;
  const int32_t neurons = 500;
  lsh_schedule s;
  s.rehash_every = 5;
  s.rebuild_every = 15;
  rng r(7);
  std::vector<float> w(static_cast<size_t>(neurons * dim));
  lsh_config cfg;
  cfg.hashes = 2;
  cfg.tables = 8;
  lsh_index running(cfg, dim, neurons, 16, bucket_policy::reservoir);
  for (int64_t step = 1; step <= 30; ++step) {
    for (auto& v : w) v = static_cast<float>(r.normal());
    running.refresh(s, step, w.data(), dim);
  }
  EXPECT_EQ(last_refresh(s, 30), 30);
  EXPECT_EQ(last_refresh(s, 33), 30);
  EXPECT_EQ(rebuilds_by(s, 30), 2);
  lsh_index resumed(cfg, dim, neurons, 16, bucket_policy::reservoir);
  resumed.resume_at(s, 30, w.data(), dim);
  EXPECT_EQ(resumed.generation(), running.generation());
  std::vector<uint8_t> marks(neurons, 0);
  for (int32_t j = 0; j < 40; ++j) {
    rng a(j), b(j);
    const float* q = w.data() + j * dim;
    EXPECT_EQ(running.active(q, {}, 0, a, marks), resumed.active(q, {}, 0, b, marks)) << "query " << j;
  }
}
