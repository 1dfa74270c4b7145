// A shard process's view of its coordinator (actors/ps/shards/coordinator_watch.hpp):
// served, orphaned, reattached, finished, expired; driven with a clock of its own.

#include <gtest/gtest.h>

#include "actors/ps/shards/coordinator_watch.hpp"
#include "schema/shard_codec.hpp"

namespace cleave {
namespace {

using watch_clock = coordinator_watch::clock;
const watch_clock::time_point t0{};

watch_clock::time_point at(double seconds) {
  return t0 + std::chrono::duration_cast<watch_clock::duration>(std::chrono::duration<double>(seconds));
}

uint16_t kind(shard_kind k) { return static_cast<uint16_t>(k); }

TEST(coordinator_watch, only_attach_restore_and_fleet_claim_the_shard) {
  EXPECT_TRUE(claims_coordinator(kind(shard_kind::attach)));
  EXPECT_TRUE(claims_coordinator(kind(shard_kind::restore)));
  EXPECT_TRUE(claims_coordinator(kind(shard_kind::fleet)));
  for (auto k : {shard_kind::stats, shard_kind::has_checkpoint_dir, shard_kind::finish, shard_kind::products,
                 shard_kind::zero_grads, shard_kind::part})
    EXPECT_FALSE(claims_coordinator(kind(k))) << kind(k);
}

TEST(coordinator_watch, serves_the_first_connection_that_claims_it) {
  coordinator_watch w(10);
  EXPECT_EQ(w.state(), coordinator_state::waiting);
  EXPECT_TRUE(w.admits(1));
  EXPECT_TRUE(w.admits(2));
  EXPECT_FALSE(w.accepted(1, false));  // a question claims nothing
  EXPECT_EQ(w.state(), coordinator_state::waiting);
  EXPECT_TRUE(w.accepted(2, true));
  EXPECT_EQ(w.state(), coordinator_state::serving);
  EXPECT_EQ(w.coordinator(), 2u);
  EXPECT_TRUE(w.admits(2));
  EXPECT_FALSE(w.admits(1));
  EXPECT_FALSE(w.accepted(1, true));  // a second attach elsewhere takes nothing
  EXPECT_EQ(w.coordinator(), 2u);
  // Another connection closing is no loss.
  EXPECT_EQ(w.closed(1, "peer", at(1)), coordinator_state::serving);
}

TEST(coordinator_watch, an_orderly_end_finishes) {
  coordinator_watch w(10);
  w.accepted(3, true);
  w.finish(4);  // not the coordinator: ignored
  EXPECT_EQ(w.closed(3, "connection closed by peer", at(1)), coordinator_state::orphaned);
  coordinator_watch v(10);
  v.accepted(3, true);
  v.finish(3);
  EXPECT_EQ(v.state(), coordinator_state::serving);  // until its connection closes
  EXPECT_EQ(v.closed(3, "connection closed by peer", at(1)), coordinator_state::finished);
  EXPECT_FALSE(v.admits(3));
  EXPECT_EQ(v.why(), "the coordinator ended the job");
}

TEST(coordinator_watch, an_orphan_waits_for_any_coordinator_until_its_deadline) {
  coordinator_watch w(30);
  w.accepted(1, true);
  EXPECT_EQ(w.closed(1, "connection closed by peer", at(100)), coordinator_state::orphaned);
  EXPECT_EQ(w.deadline(), at(130));
  EXPECT_NE(w.why().find("closed without ending the job (connection closed by peer)"), std::string::npos);
  EXPECT_TRUE(w.admits(7));
  EXPECT_EQ(w.tick(at(129.9)), coordinator_state::orphaned);
  EXPECT_TRUE(w.accepted(7, true));  // the restarted coordinator
  EXPECT_EQ(w.state(), coordinator_state::serving);
  EXPECT_EQ(w.coordinators(), 2);
  EXPECT_TRUE(w.why().empty());
  EXPECT_EQ(w.tick(at(500)), coordinator_state::serving);  // served: no deadline
  // Lost again: a new deadline from this loss.
  EXPECT_EQ(w.closed(7, "reset", at(600)), coordinator_state::orphaned);
  EXPECT_EQ(w.deadline(), at(630));
}

TEST(coordinator_watch, an_orphan_expires_with_one_line) {
  coordinator_watch w(2.5);
  w.accepted(1, true);
  w.closed(1, "connection closed by peer", at(10));
  EXPECT_EQ(w.tick(at(12.49)), coordinator_state::orphaned);
  EXPECT_EQ(w.tick(at(12.5)), coordinator_state::expired);
  EXPECT_EQ(w.why(),
            "no coordinator attached within 2.5 s (--coordinator-timeout) after the coordinator's connection "
            "closed without ending the job (connection closed by peer)");
  EXPECT_EQ(w.why().find('\n'), std::string::npos);
  EXPECT_FALSE(w.admits(2));
  EXPECT_FALSE(w.accepted(2, true));  // too late
  EXPECT_EQ(w.state(), coordinator_state::expired);
}

TEST(coordinator_watch, zero_timeout_expires_at_once) {
  coordinator_watch w(0);
  w.accepted(1, true);
  EXPECT_EQ(w.closed(1, "connection closed by peer", at(5)), coordinator_state::expired);
  EXPECT_NE(w.why().find("within 0 s"), std::string::npos);
}

TEST(coordinator_watch, a_waiting_shard_never_expires) {
  coordinator_watch w(1);
  EXPECT_EQ(w.closed(1, "peer", at(0)), coordinator_state::waiting);
  EXPECT_EQ(w.tick(at(1e6)), coordinator_state::waiting);
}

}  // namespace
}  // namespace cleave
