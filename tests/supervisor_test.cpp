// The supervision tree with real actors: one-for-one restarts within the
// restart budget, escalation past it, temporary children, and children
// stopping with their supervisor.

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <caf/all.hpp>
#include <gtest/gtest.h>

#include "actors/supervisor/backoff.hpp"
#include "actors/supervisor/supervisor.hpp"

using namespace cleave;

namespace {

using crash_atom = caf::atom_constant<caf::atom("crash")>;

// A child that counts its starts and fails on request.
caf::behavior crashy(caf::event_based_actor* self, std::shared_ptr<std::atomic<int>> starts) {
  ++*starts;
  return {
    [=](crash_atom) { self->quit(caf::make_error(caf::sec::runtime_error, "boom")); },
    [](caf::get_atom) { return 1; },
  };
}

caf::actor lookup(caf::actor_system& sys, const char* name) {
  return caf::actor_cast<caf::actor>(sys.registry().get(caf::atom_from_string(name)));
}

// Polls until `pred` holds (actors run on other threads), at most 5 s.
template <class Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

struct supervision : ::testing::Test {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  std::shared_ptr<std::atomic<int>> starts = std::make_shared<std::atomic<int>>(0);

  child_spec spec(const char* name, bool restart = true) {
    auto s = starts;
    return {name, [s](caf::local_actor* sup) { return sup->spawn(crashy, s); }, restart};
  }
};

}  // namespace

TEST_F(supervision, a_crashed_child_is_restarted_until_the_budget_runs_out) {
  caf::scoped_actor self{sys};
  supervisor_options opts;
  opts.max_restarts = 3;
  opts.window_seconds = 60;
  auto sup = sys.spawn(supervisor_actor, opts, std::vector<child_spec>{spec("crashy")});
  self->monitor(sup);
  ASSERT_TRUE(eventually([&] { return *starts == 1 && lookup(sys, "crashy"); }));
  for (int round = 1; round <= 3; ++round) {
    auto before = lookup(sys, "crashy");
    self->send(before, crash_atom::value);
    ASSERT_TRUE(eventually([&] { return *starts == round + 1; })) << "round " << round;
    ASSERT_TRUE(eventually([&] { return lookup(sys, "crashy") != before; }))
      << "the registry must name the restarted child";
  }
  // The fourth failure within the window exceeds the budget: the supervisor
  // escalates by exiting with the child's error.
  self->send(lookup(sys, "crashy"), crash_atom::value);
  bool down = false;
  self->receive([&](const caf::down_msg& msg) {
    down = true;
    EXPECT_EQ(msg.reason, caf::sec::runtime_error) << sys.render(msg.reason);
  }, caf::after(std::chrono::seconds(5)) >> [] {});
  EXPECT_TRUE(down) << "the supervisor did not escalate";
  EXPECT_EQ(*starts, 4);
}

TEST_F(supervision, a_temporary_child_is_left_dead_and_the_others_run_on) {
  caf::scoped_actor self{sys};
  auto sup = sys.spawn(supervisor_actor, supervisor_options{},
                       std::vector<child_spec>{spec("temp", false), spec("keeper")});
  ASSERT_TRUE(eventually([&] { return *starts == 2; }));
  self->send(lookup(sys, "temp"), crash_atom::value);
  uint64_t children = 0;
  ASSERT_TRUE(eventually([&] {
    self->request(sup, caf::infinite, caf::get_atom::value)
      .receive([&](uint64_t n) { children = n; }, [](caf::error&) {});
    return children == 1;
  }));
  EXPECT_EQ(*starts, 2) << "a temporary child must not be restarted";
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
}

TEST_F(supervision, children_stop_with_their_supervisor) {
  caf::scoped_actor self{sys};
  auto sup = sys.spawn(supervisor_actor, supervisor_options{},
                       std::vector<child_spec>{spec("a"), spec("b")});
  ASSERT_TRUE(eventually([&] { return *starts == 2; }));
  auto a = lookup(sys, "a");
  auto b = lookup(sys, "b");
  self->monitor(a);
  self->monitor(b);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  int downs = 0;
  for (int i = 0; i < 2; ++i)
    self->receive([&](const caf::down_msg&) { ++downs; },
                  caf::after(std::chrono::seconds(5)) >> [] {});
  EXPECT_EQ(downs, 2);
}

// The wait before a planner process starts its planner again (cmd/role_service.cpp).
TEST(backoff, doubles_up_to_its_cap_and_starts_over_after_a_success) {
  backoff b(0.25, 2, 5);
  EXPECT_DOUBLE_EQ(b.next(), 0.25);
  EXPECT_DOUBLE_EQ(b.next(), 0.5);
  EXPECT_DOUBLE_EQ(b.next(), 1.0);
  EXPECT_DOUBLE_EQ(b.next(), 2.0);
  EXPECT_DOUBLE_EQ(b.next(), 4.0);
  EXPECT_DOUBLE_EQ(b.next(), 5.0);
  for (int i = 0; i < 1000; ++i) EXPECT_DOUBLE_EQ(b.next(), 5.0);  // no overflow however long it fails
  EXPECT_EQ(b.failures(), 1006);
  b.reset();
  EXPECT_EQ(b.failures(), 0);
  EXPECT_DOUBLE_EQ(b.next(), 0.25);
  backoff flat(1, 1, 1);
  EXPECT_DOUBLE_EQ(flat.next(), 1);
  EXPECT_DOUBLE_EQ(flat.next(), 1);
}
