// The relay's books (actors/relay/relay_books.hpp): which blocks it keeps,
// fills in, leaves as names and answers misses with.

#include <gtest/gtest.h>

#include "actors/relay/relay_books.hpp"

namespace cleave {
namespace {

constexpr uint64_t device_a = 1, device_b = 2;

operand block(uint64_t key, int64_t rows, int64_t cols, bool with_values) {
  operand op;
  op.key = key;
  op.rows = rows;
  op.cols = cols;
  if (with_values)
    for (int64_t i = 0; i < rows * cols; ++i) op.data.push_back(static_cast<float>(key) + 0.25f * static_cast<float>(i));
  return op;
}

tile_task task(uint64_t step, uint32_t tile, operand a, operand b) {
  tile_task t;
  t.key = tile_key{step, 0, tile};
  t.a = std::move(a);
  t.b = std::move(b);
  return t;
}

std::vector<float> values_of(const operand& op) {
  std::vector<float> out(static_cast<size_t>(op.rows * op.cols));
  op.copy_values(out.data());
  return out;
}

TEST(relay_books, a_block_sent_once_is_filled_in_for_another_device) {
  relay_books books(1 << 20);
  books.admit(device_a, 1 << 20);
  books.admit(device_b, 1 << 20);
  auto first = books.pass_down(device_a, task(1, 0, block(11, 4, 8, true), block(12, 8, 4, true)));
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->a.carries_values());
  // The ps names both blocks to device b: the relay fills them in, unchanged.
  auto second = books.pass_down(device_b, task(1, 1, block(11, 4, 8, false), block(12, 8, 4, false)));
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->a.carries_values());
  ASSERT_TRUE(second->b.carries_values());
  EXPECT_EQ(values_of(second->a), block(11, 4, 8, true).data);
  EXPECT_EQ(values_of(second->b), block(12, 8, 4, true).data);
  EXPECT_EQ(books.counters().blocks_in, 2u);
  EXPECT_EQ(books.counters().blocks_served, 2u);
  // Named again to b, which now holds them: names go on, as the ps sent them.
  auto third = books.pass_down(device_b, task(1, 2, block(11, 4, 8, false), block(12, 8, 4, false)));
  ASSERT_TRUE(third);
  EXPECT_FALSE(third->a.carries_values());
  EXPECT_FALSE(third->b.carries_values());
  EXPECT_EQ(books.counters().blocks_named, 2u);
}

TEST(relay_books, a_miss_is_answered_from_the_store_or_sent_up) {
  relay_books books(1 << 20);
  books.admit(device_a, 1 << 20);
  books.pass_down(device_a, task(1, 0, block(11, 4, 8, true), block(12, 8, 4, true)));
  // The device evicted block 11 and says so: the relay sends the task again with it.
  auto again = books.answer_miss(device_a, tile_miss{tile_key{1, 0, 0}, -1, 11});
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->a.carries_values());
  EXPECT_FALSE(again->b.carries_values());
  EXPECT_EQ(values_of(again->a), block(11, 4, 8, true).data);
  EXPECT_EQ(books.counters().misses_answered, 1u);
  // A block the relay never met is on its way: the task waits for it, and
  // goes on named if it never comes; the device's miss then goes up to the ps.
  EXPECT_FALSE(books.pass_down(device_a, task(1, 1, block(13, 4, 8, false), block(12, 8, 4, false)), 5.0));
  EXPECT_TRUE(books.expire(6.0, 10.0).empty());
  auto expired = books.expire(16.0, 10.0);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_FALSE(expired[0].second.a.carries_values());
  EXPECT_EQ(books.counters().tasks_expired, 1u);
  EXPECT_FALSE(books.answer_miss(device_a, tile_miss{tile_key{1, 0, 1}, -1, 13}));
  EXPECT_EQ(books.counters().misses_up, 1u);
  // A task the device was never given, or an answered one, is the ps's to judge.
  EXPECT_FALSE(books.answer_miss(device_a, tile_miss{tile_key{1, 0, 9}, -1, 11}));
  books.answered(device_a, tile_key{1, 0, 0});
  EXPECT_FALSE(books.answer_miss(device_a, tile_miss{tile_key{1, 0, 0}, -1, 11}));
}

TEST(relay_books, the_store_is_bounded_and_follows_the_step) {
  // Room for one 4 x 8 block of floats (128 bytes) and no more.
  relay_books books(160);
  books.admit(device_a, 1 << 20);
  books.admit(device_b, 1 << 20);
  books.pass_down(device_a, task(1, 0, block(11, 4, 8, true), block(12, 4, 8, true)));
  EXPECT_LE(books.store_bytes(), 160u);
  auto later = books.pass_down(device_b, task(1, 1, block(11, 4, 8, false), block(12, 4, 8, false)));
  ASSERT_TRUE(later) << "block 11 came and went: nothing to wait for";
  EXPECT_FALSE(later->a.carries_values()) << "evicted for block 12";
  EXPECT_TRUE(later->b.carries_values());
  // A new step: weights changed, nothing recurs; the store starts empty,
  // and block 12 named now is one of the new step's, on its way.
  EXPECT_FALSE(books.pass_down(device_b, task(2, 0, block(12, 4, 8, false), block(14, 1, 1, true))));
}

TEST(relay_books, a_task_that_overtook_its_block_waits_for_it) {
  relay_books books(1 << 20);
  books.admit(device_a, 1 << 20);
  books.admit(device_b, 1 << 20);
  // The ps sent block 11 to device a and then named it to device b; b's
  // task came first, on its own connection.
  EXPECT_FALSE(books.pass_down(device_b, task(1, 1, block(11, 4, 8, false), block(13, 1, 1, true))));
  EXPECT_TRUE(books.released().empty());
  auto first = books.pass_down(device_a, task(1, 0, block(11, 4, 8, true), block(12, 8, 4, true)));
  ASSERT_TRUE(first);
  auto released = books.released();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].first, device_b);
  ASSERT_TRUE(released[0].second.a.carries_values());
  EXPECT_EQ(values_of(released[0].second.a), block(11, 4, 8, true).data);
  EXPECT_TRUE(books.released().empty()) << "released once";
  EXPECT_EQ(books.counters().tasks_parked, 1u);
  // A device that leaves takes its parked tasks with it.
  EXPECT_FALSE(books.pass_down(device_b, task(1, 2, block(15, 4, 8, false), block(13, 1, 1, false))));
  books.drop(device_b);
  EXPECT_TRUE(books.expire(1e9, 1.0).empty());
}

TEST(relay_books, a_device_not_admitted_gets_its_tasks_as_they_came) {
  relay_books books(1 << 20);
  auto t = books.pass_down(device_a, task(1, 0, block(11, 4, 8, true), block(12, 8, 4, false)));
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->a.carries_values());
  EXPECT_FALSE(t->b.carries_values());
  EXPECT_EQ(books.counters().blocks_in, 0u);
  books.admit(device_b, 1 << 20);
  books.drop(device_b);
  EXPECT_EQ(books.devices(), 0u);
}

}  // namespace
}  // namespace cleave
