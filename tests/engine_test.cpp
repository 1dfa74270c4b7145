// The distributed engine's pure parts: the order results are folded into C,
// the policy that picks a device for a tile that must move, and how the
// engine's view of the fleet counts failures.

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "actors/ps/engine/fleet_client.hpp"
#include "actors/ps/engine/fold_order.hpp"
#include "actors/ps/engine/send_window.hpp"
#include "actors/ps/engine/tile_policy.hpp"
#include "kernels/random.hpp"

using namespace cleave;

namespace {

struct folding_case {
  int64_t rows = 0, cols = 0;
  std::vector<c_block> blocks;
  std::vector<std::vector<float>> results;  // one per tile, row-major
};

// A grid of gm x gn blocks over C, each with gk K-split partials (tile order
// as the planner issues them: K partials of a block one after another, or
// interleaved with other blocks).
folding_case grid_case(int64_t rows, int64_t cols, int gm, int gn, int gk, bool interleave,
                       uint64_t seed) {
  folding_case fc;
  fc.rows = rows;
  fc.cols = cols;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> value(0.0f, 1.0f);
  auto edge = [](int64_t size, int parts, int i) { return size * i / parts; };
  std::vector<c_block> one_k;
  for (int i = 0; i < gm; ++i)
    for (int j = 0; j < gn; ++j)
      one_k.push_back({edge(rows, gm, i), edge(rows, gm, i + 1), edge(cols, gn, j), edge(cols, gn, j + 1)});
  for (int k = 0; k < gk; ++k)
    for (size_t b = 0; b < one_k.size(); ++b)
      fc.blocks.push_back(interleave ? one_k[b] : one_k[(b + static_cast<size_t>(k)) % one_k.size()]);
  for (const auto& b : fc.blocks) {
    std::vector<float> r(static_cast<size_t>((b.m1 - b.m0) * (b.n1 - b.n0)));
    for (auto& x : r) x = value(rng) * 1e3f;  // large and mixed signs: the order shows in the bits
    fc.results.push_back(std::move(r));
  }
  return fc;
}

// Folds every result in `arrival` order, as the engine does.
tensor fold_in(const folding_case& fc, const std::vector<size_t>& arrival, float beta,
               const tensor& c0) {
  tensor c = c0;
  fold_order order(fc.blocks, fc.rows, fc.cols, beta);
  order.prepare(c.view());
  for (size_t i : arrival)
    for (size_t j : order.ready(i)) fold_tile(c.view(), fc.blocks[j], fc.results[j].data(), order.copies(j));
  for (size_t i = 0; i < fc.blocks.size(); ++i) EXPECT_TRUE(order.folded(i)) << "tile " << i;
  return c;
}

void expect_order_free(const folding_case& fc, float beta) {
  tensor c0(fc.rows, fc.cols);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (int64_t i = 0; i < c0.size(); ++i) c0.data()[i] = value(rng);
  std::vector<size_t> in_order(fc.blocks.size());
  for (size_t i = 0; i < in_order.size(); ++i) in_order[i] = i;
  const tensor want = fold_in(fc, in_order, beta, c0);
  // The same sums in the same order, written out by hand.
  tensor by_hand = c0;
  if (beta == 0.0f) by_hand.zero();
  else for (int64_t i = 0; i < by_hand.size(); ++i) by_hand.data()[i] *= beta;
  for (size_t t = 0; t < fc.blocks.size(); ++t) {
    const auto& b = fc.blocks[t];
    for (int64_t r = b.m0; r < b.m1; ++r)
      for (int64_t x = b.n0; x < b.n1; ++x)
        by_hand.at(r, x) += fc.results[t][static_cast<size_t>((r - b.m0) * (b.n1 - b.n0) + (x - b.n0))];
  }
  EXPECT_EQ(want.storage(), by_hand.storage());
  for (int round = 0; round < 200; ++round) {
    auto arrival = in_order;
    std::shuffle(arrival.begin(), arrival.end(), rng);
    ASSERT_EQ(fold_in(fc, arrival, beta, c0).storage(), want.storage()) << "round " << round;
  }
}

}  // namespace

TEST(fold_order, a_k_split_grid_gives_the_same_bits_in_any_arrival_order) {
  for (float beta : {0.0f, 1.0f, 0.5f}) {
    expect_order_free(grid_case(37, 29, 3, 2, 4, true, 1), beta);
    expect_order_free(grid_case(16, 40, 1, 5, 3, false, 2), beta);
  }
}

TEST(fold_order, overlapping_blocks_are_chained_in_tile_order) {
  folding_case fc = grid_case(12, 10, 2, 2, 1, true, 3);
  // A block that overlaps two others: not a grid, so every tile waits for
  // the one before it, and C is zeroed first when beta is 0.
  fc.blocks.push_back({3, 9, 2, 8});
  fc.results.emplace_back(36, 1.5f);
  fold_order order(fc.blocks, fc.rows, fc.cols, 0.0f);
  EXPECT_FALSE(order.grid());
  EXPECT_TRUE(order.ready(4).empty());
  EXPECT_TRUE(order.ready(2).empty());
  EXPECT_EQ(order.ready(0), std::vector<size_t>{0});
  EXPECT_EQ(order.ready(1), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(order.ready(3), (std::vector<size_t>{3, 4}));
  for (float beta : {0.0f, 2.0f}) expect_order_free(fc, beta);
}

TEST(fold_order, the_first_tile_on_each_block_is_copied_only_when_beta_is_zero) {
  const folding_case fc = grid_case(8, 8, 2, 1, 2, true, 4);
  fold_order zero(fc.blocks, 8, 8, 0.0f), one(fc.blocks, 8, 8, 1.0f);
  EXPECT_TRUE(zero.grid());
  EXPECT_TRUE(zero.copies(0) && zero.copies(1));
  EXPECT_FALSE(zero.copies(2) || zero.copies(3));
  for (size_t i = 0; i < 4; ++i) EXPECT_FALSE(one.copies(i));
}

namespace {

policy_tile held(std::vector<int32_t> holders, uint64_t working_set = 100, bool done = false) {
  policy_tile t;
  t.holders = std::move(holders);
  t.working_set = working_set;
  t.done = done;
  return t;
}

}  // namespace

TEST(tile_policy, a_moving_tile_goes_to_the_least_loaded_device_that_can_hold_it) {
  // Devices listed out of order: ties go to the lowest id.
  tile_policy policy({{7, 1000}, {3, 1000}, {5, 1000}, {1, 50}});
  std::vector<policy_tile> tiles{held({}), held({3}), held({3}), held({5}), held({7}, 100, true)};
  // 7 holds only a finished tile, so it is idle; 1 is too small.
  EXPECT_EQ(policy.take_over(tiles, 0), 7);
  tiles[4].done = false;  // now 5 and 7 have one each, 3 has two: ties to the lowest id
  EXPECT_EQ(policy.take_over(tiles, 0), 5);
  // Never a device already on the tile.
  tiles[3].holders = {5, 7};
  EXPECT_EQ(policy.take_over(tiles, 3), 3);
  // No device big enough: the PS computes it.
  tiles[0].working_set = 5000;
  EXPECT_EQ(policy.take_over(tiles, 0), -1);
  EXPECT_EQ(tile_policy({}).take_over(tiles, 1), -1);
}

TEST(tile_policy, speculation_gives_idle_devices_copies_of_held_tiles) {
  tile_policy policy({{4, 1000}, {2, 1000}, {9, 150}, {6, 1000}, {1, 10}});
  std::vector<policy_tile> tiles{held({2}, 100, true), held({2}), held({4}, 200), held({}),
                                 held({6}, 100)};
  tiles[4].speculated = true;
  // Busy: 2, 4, 6. Idle and able to hold the first unfinished tile (100 B):
  // 9 (150 B), in id order. Tile 1 fits 9; tile 2 (200 B) would be next.
  auto copies = policy.speculate(tiles);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0], (std::pair<size_t, int32_t>{1, 9}));
  // A tile that does not fit the next idle device is passed over.
  tiles[1].speculated = true;
  tiles[2].working_set = 300;
  tiles.push_back(held({4}, 120));
  copies = policy.speculate(tiles);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0], (std::pair<size_t, int32_t>{5, 9}));
  // Nothing unfinished: no copies.
  for (auto& t : tiles) t.done = true;
  EXPECT_TRUE(policy.speculate(tiles).empty());
}

// Fleet events reach the engine twice, from the detector and through the
// planner, in either order: each failure counts once, a device suspected
// again after it came back counts again, and a dead id stays dead.
TEST(fleet_client, counts_each_failure_once_whatever_the_order_of_the_copies) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto planner = sys.spawn([]() -> caf::behavior { return {[](int) {}}; });
  runtime_accounts acc;
  fleet_client fleet(self, planner, {}, false, acc);
  using k = fleet_event_kind;
  auto feed = [&](k kind, int32_t id) { fleet.on_event(fleet_event{kind, id, 0}); };
  feed(k::suspect, 1);
  feed(k::dead, 1);
  feed(k::suspect, 1);  // the planner's copy, late
  feed(k::dead, 1);
  EXPECT_EQ(acc.churn.failures_detected, 1u);
  feed(k::dead, 2);
  feed(k::suspect, 2);
  feed(k::rejoin, 2);
  feed(k::suspect, 2);
  EXPECT_EQ(acc.churn.failures_detected, 2u);
  feed(k::suspect, 3);
  feed(k::rejoin, 3);
  feed(k::suspect, 3);
  feed(k::suspect, 3);
  EXPECT_EQ(acc.churn.failures_detected, 4u);
  feed(k::quarantined, 4);
  EXPECT_EQ(acc.churn.failures_detected, 4u);
  caf::anon_send_exit(planner, caf::exit_reason::kill);
}

TEST(send_window, a_device_holds_at_most_its_depth_and_waiting_tasks_keep_their_order) {
  send_window w;
  for (size_t t = 0; t < 2; ++t) {
    ASSERT_TRUE(w.has_room(7, 2));
    w.sent(7);
  }
  EXPECT_FALSE(w.has_room(7, 2));
  w.enqueue(7, 2, {0, 2, false});
  w.enqueue(7, 2, {1, 3, true});
  w.answered(7);
  EXPECT_FALSE(w.has_room(7, 2)) << "a new task goes behind the waiting ones";
  w.sent(7);
  EXPECT_FALSE(w.next(7)) << "no room yet";
  w.answered(7);
  auto first = w.next(7);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->tile, 2u);
  w.sent(7);
  EXPECT_FALSE(w.next(7));
  w.answered(7);
  auto second = w.next(7);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->call, 1u);
  EXPECT_TRUE(second->with_all_data);
  EXPECT_EQ(w.most_in_flight(7), 2u);
  EXPECT_EQ(w.most_in_flight(8), 0u);
}

TEST(send_window, a_lost_device_s_waiting_tasks_are_dropped_and_stray_answers_do_not_underflow) {
  send_window w;
  ASSERT_TRUE(w.has_room(3, 1));
  w.sent(3);
  w.enqueue(3, 1, {0, 1, false});
  w.forget(3);
  EXPECT_EQ(w.waiting(3), 0u);
  w.answered(3);
  w.answered(3);
  EXPECT_TRUE(w.has_room(3, 1));
  w.sent(3);
  EXPECT_FALSE(w.has_room(3, 1));
}
