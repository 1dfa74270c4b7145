// The crypto pool alone: a strand's jobs run in order and never two at once,
// strands run in parallel, a cancelled strand's queued jobs never run while
// its running one finishes on what it owns, and a job that throws fails its
// strand (with the reason) and nothing else.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "actors/transport/crypto_pool.hpp"
#include "tests/completion_count.hpp"

using namespace cleave::transport;
using namespace std::chrono_literals;

namespace {

using counter = cleave::testing::completion_count;

TEST(CryptoPool, StrandRunsJobsInOrderOneAtATime) {
  auto pool = crypto_pool::make(4);
  ASSERT_EQ(pool->threads(), 4u);
  constexpr int jobs = 2000;
  struct strand_state {
    std::shared_ptr<crypto_strand> s;
    std::vector<int> seen;  // unsynchronised on purpose: the strand orders access
    std::atomic<int> running{0};
    std::atomic<bool> overlap{false};
  };
  std::vector<std::unique_ptr<strand_state>> strands;
  for (int i = 0; i < 3; ++i) {
    strands.push_back(std::make_unique<strand_state>());
    strands.back()->s = pool->make_strand();
  }
  counter done;
  for (int j = 0; j < jobs; ++j)
    for (auto& st : strands) {
      auto p = st.get();
      ASSERT_TRUE(p->s->post([p, j, &done] {
        if (p->running.fetch_add(1) != 0) p->overlap = true;
        p->seen.push_back(j);
        p->running.fetch_sub(1);
        done.add();
      }));
    }
  ASSERT_TRUE(done.wait_for(jobs * strands.size()));
  for (auto& st : strands) {
    EXPECT_FALSE(st->overlap);
    ASSERT_EQ(st->seen.size(), size_t{jobs});
    for (int j = 0; j < jobs; ++j) ASSERT_EQ(st->seen[j], j);
    EXPECT_EQ(st->s->pending(), 0u);
  }
}

TEST(CryptoPool, StrandsRunInParallel) {
  auto pool = crypto_pool::make(2);
  auto a = pool->make_strand();
  auto b = pool->make_strand();
  // Each job waits for the other to start: only parallel strands finish.
  std::promise<void> a_started, b_started;
  auto fa = b_started.get_future().share();
  auto fb = a_started.get_future().share();
  std::atomic<int> met{0};
  counter done;
  a->post([&] {
    a_started.set_value();
    if (fa.wait_for(5s) == std::future_status::ready) ++met;
    done.add();
  });
  b->post([&] {
    b_started.set_value();
    if (fb.wait_for(5s) == std::future_status::ready) ++met;
    done.add();
  });
  ASSERT_TRUE(done.wait_for(2));
  EXPECT_EQ(met.load(), 2);
}

TEST(CryptoPool, CancelledWhileRunningFinishesThatJobOnlyAndOnWhatItOwns) {
  auto pool = crypto_pool::make(2);
  auto s = pool->make_strand();
  // What a connection shares with its job: the connection lets go while the
  // job runs, the job still holds it.
  auto session = std::make_shared<std::vector<char>>(1 << 20, 'x');
  std::weak_ptr<std::vector<char>> watch = session;
  std::promise<void> started, release;
  auto go = release.get_future();
  std::atomic<int> later_ran{0};
  counter done;
  ASSERT_TRUE(s->post([session, &started, &go, &done] {
    started.set_value();
    go.wait();
    std::fill(session->begin(), session->end(), 'y');  // still valid: we own it
    done.add();
  }));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->post([&later_ran] { ++later_ran; }));
  started.get_future().wait();
  EXPECT_EQ(s->pending(), 11u);
  session.reset();  // the connection closes
  s->cancel();
  EXPECT_EQ(s->pending(), 1u);  // the running one
  EXPECT_FALSE(s->post([&later_ran] { ++later_ran; }));
  EXPECT_FALSE(watch.expired());
  release.set_value();
  ASSERT_TRUE(done.wait_for(1));
  for (int i = 0; i < 200 && !watch.expired(); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(watch.expired());  // released by the job once it finished
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(later_ran.load(), 0);
  EXPECT_EQ(s->pending(), 0u);
}

TEST(CryptoPool, AThrowingJobFailsItsStrandOnly) {
  auto pool = crypto_pool::make(1);
  auto bad = pool->make_strand();
  auto good = pool->make_strand();
  std::atomic<int> after{0};
  counter done;
  bad->post([] { throw std::runtime_error("record layer exploded"); });
  bad->post([&after] { ++after; });
  good->post([&done] { done.add(); });
  ASSERT_TRUE(done.wait_for(1));
  for (int i = 0; i < 200 && bad->error().empty(); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(bad->error(), "record layer exploded");
  EXPECT_FALSE(bad->post([&after] { ++after; }));
  EXPECT_EQ(after.load(), 0);
  EXPECT_TRUE(good->error().empty());
  EXPECT_TRUE(good->post([&done] { done.add(); }));
  EXPECT_TRUE(done.wait_for(2));
}

TEST(CryptoPool, DestroyingThePoolFinishesQueuedJobs) {
  std::atomic<int> ran{0};
  std::shared_ptr<crypto_strand> s;
  {
    auto pool = crypto_pool::make(1);
    s = pool->make_strand();
    for (int i = 0; i < 100; ++i) s->post([&ran] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 100);
  EXPECT_FALSE(s->post([&ran] { ++ran; }));  // the pool is gone
}

TEST(CryptoPool, DefaultSizeIsSmall) {
  auto pool = crypto_pool::make(0);
  EXPECT_GE(pool->threads(), 1u);
  EXPECT_LE(pool->threads(), 2u);
  EXPECT_EQ(crypto_pool::shared(), crypto_pool::shared());
}

}  // namespace
