// member_ids: device ids never given twice, kept as ranges (id_ranges).

#include <random>
#include <set>

#include <gtest/gtest.h>

#include "actors/planner/id_ranges.hpp"
#include "actors/planner/member_ids.hpp"

using namespace cleave;

TEST(member_ids, ids_in_order_take_one_range) {
  member_ids ids;
  for (int32_t i = 0; i < 100000; ++i) ASSERT_EQ(ids.take(-1), i);
  EXPECT_EQ(ids.ranges(), 1u);
  EXPECT_TRUE(ids.given(99999));
  EXPECT_FALSE(ids.given(100000));
  EXPECT_FALSE(ids.given(-1));
}

TEST(member_ids, a_preferred_id_is_honoured_once) {
  member_ids ids;
  EXPECT_EQ(ids.take(3), 3);
  EXPECT_EQ(ids.take(3), 0);  // given already: the lowest free one instead
  EXPECT_EQ(ids.take(-1), 1);
  EXPECT_EQ(ids.take(-1), 2);
  EXPECT_EQ(ids.take(-1), 4);  // 3 is skipped
  EXPECT_EQ(ids.ranges(), 1u);  // 0..4 merged
  EXPECT_EQ(ids.take(member_ids::max_id + 1), 5);  // out of range: not honoured
  EXPECT_EQ(ids.take(member_ids::max_id), member_ids::max_id);
  EXPECT_EQ(ids.ranges(), 2u);
}

// Against the plain set it replaces: the same ids for any sequence of
// requests, and a range count no larger than the gaps allow.
TEST(member_ids, agrees_with_a_set_of_every_id_given) {
  std::mt19937 rng(7);
  member_ids ids;
  std::set<int32_t> used;
  int32_t next = 0;
  std::uniform_int_distribution<int32_t> pick(-5, 3000);
  for (int i = 0; i < 20000; ++i) {
    const int32_t preferred = pick(rng) % 3 == 0 ? pick(rng) : -1;
    int32_t want = preferred;
    if (want < 0 || want > member_ids::max_id || used.count(want) > 0) {
      while (used.count(next) > 0) ++next;
      want = next++;
    }
    used.insert(want);
    ASSERT_EQ(ids.take(preferred), want) << "request " << i;
  }
  for (int32_t id = -2; id < 25000; ++id) ASSERT_EQ(ids.given(id), used.count(id) > 0) << id;
  size_t runs = 0;
  for (auto it = used.begin(); it != used.end(); ++it)
    if (it == used.begin() || *std::prev(it) != *it - 1) ++runs;
  EXPECT_EQ(ids.ranges(), runs);
}

TEST(id_ranges, inserts_once_and_merges_neighbours) {
  id_ranges ids;
  EXPECT_TRUE(ids.insert(5));
  EXPECT_FALSE(ids.insert(5));
  EXPECT_TRUE(ids.insert(7));
  EXPECT_EQ(ids.ranges(), 2u);
  EXPECT_TRUE(ids.insert(6));  // joins 5 and 7
  EXPECT_EQ(ids.ranges(), 1u);
  EXPECT_TRUE(ids.insert(4));
  EXPECT_TRUE(ids.insert(8));
  EXPECT_EQ(ids.ranges(), 1u);
  for (int32_t id = 4; id <= 8; ++id) EXPECT_TRUE(ids.contains(id));
  EXPECT_FALSE(ids.contains(3));
  EXPECT_FALSE(ids.contains(9));
  EXPECT_FALSE(ids.contains(-1));
}
