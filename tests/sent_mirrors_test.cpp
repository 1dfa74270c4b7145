// What the PS knows its devices hold (actors/ps/engine/sent_mirrors.hpp):
// devices behind one relay share its store; every other device holds its own.

#include <gtest/gtest.h>

#include "actors/ps/engine/sent_mirrors.hpp"

namespace cleave {
namespace {

fleet_member member(int32_t id, const std::string& relay) {
  fleet_member m;
  m.id = id;
  m.profile = device_profile{"phone", 2e10, uint64_t{1} << 30, 5e7, 1e7, 0.02};
  if (!relay.empty()) m.relay = relay_seat{relay, uint64_t{1} << 20, 1e9, 1e9, 1e10, 0.005};
  return m;
}

const cached_block shape{4, 8, nullptr, 0, 0, {}};

TEST(sent_mirrors, devices_behind_one_relay_share_what_it_holds) {
  sent_mirrors mirrors;
  const auto a = member(0, "city"), b = member(1, "city"), c = member(2, "town"), d = member(3, "");
  mirrors.of(a).put(7, shape);
  EXPECT_NE(mirrors.of(b).get(7), nullptr) << "same relay";
  EXPECT_EQ(mirrors.of(c).get(7), nullptr) << "another relay";
  EXPECT_EQ(mirrors.of(d).get(7), nullptr) << "a device of its own";
  EXPECT_EQ(mirrors.of(a).capacity(), uint64_t{1} << 20) << "the relay's store";
  EXPECT_EQ(mirrors.of(d).capacity(), default_cache_bytes(d.profile.memory_bytes));
  // A relay that missed a block is sent it again; what else it holds stays.
  mirrors.of(a).put(8, shape);
  mirrors.forget(b, 7);
  EXPECT_EQ(mirrors.of(a).get(7), nullptr);
  EXPECT_NE(mirrors.of(a).get(8), nullptr);
  // A device of its own that missed starts again empty.
  mirrors.of(d).put(7, shape);
  mirrors.of(d).put(8, shape);
  mirrors.forget(d, 7);
  EXPECT_EQ(mirrors.of(d).get(8), nullptr);
  mirrors.clear();
  EXPECT_EQ(mirrors.of(b).get(8), nullptr);
}

TEST(sent_mirrors, first_namings_count_once_a_step_and_once_per_holder) {
  sent_mirrors mirrors;
  const auto a = member(0, "city"), b = member(1, "city"), c = member(2, ""), d = member(3, "");
  auto first = mirrors.named(a, 5);
  EXPECT_TRUE(first.in_step && first.for_holder);
  first = mirrors.named(b, 5);
  EXPECT_FALSE(first.in_step || first.for_holder) << "the relay already had it named";
  first = mirrors.named(c, 5);
  EXPECT_TRUE(!first.in_step && first.for_holder);
  first = mirrors.named(d, 5);
  EXPECT_TRUE(!first.in_step && first.for_holder);
  mirrors.clear();
  EXPECT_TRUE(mirrors.named(b, 5).in_step);
}

}  // namespace
}  // namespace cleave
