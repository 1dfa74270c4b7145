// The D-SLIDE comparison's arithmetic: an emulated device's pacing (tiles
// and model-let frames), a model-let exchange's link time, and the dense
// data-parallel baseline's gradient exchange over a ring and its store.

#include <chrono>
#include <vector>

#include <gtest/gtest.h>

#include "actors/simulator/baselines/live_data_parallel.hpp"
#include "schema/pacing.hpp"

using namespace cleave;

namespace {

caf::timestamp at_ms(int64_t ms) { return caf::timestamp{std::chrono::milliseconds(ms)}; }

parameter param(const char* name, int64_t rows, int64_t cols, bool row_sparse) {
  parameter p;
  p.name = name;
  p.grad.resize(rows, cols);
  p.grad.zero();
  p.value = p.adam_m = p.adam_v = p.grad;
  p.row_sparse = row_sparse;
  return p;
}

}  // namespace

TEST(device_pacing, work_begins_when_it_arrived_and_the_device_is_free) {
  // Free device: from its arrival.
  auto s = pace(at_ms(100), at_ms(50), at_ms(110), 0.5);
  EXPECT_EQ(s.begin, at_ms(100));
  EXPECT_EQ(s.finish, at_ms(600));
  // Busy until 700: the next frame waits for it.
  s = pace(at_ms(100), at_ms(700), at_ms(120), 0.5);
  EXPECT_EQ(s.begin, at_ms(700));
  EXPECT_EQ(s.finish, at_ms(1200));
  // The host took longer than the profile: the answer leaves when it exists.
  s = pace(at_ms(100), at_ms(0), at_ms(900), 0.5);
  EXPECT_EQ(s.finish, at_ms(900));
}

TEST(device_pacing, a_modellet_exchange_pays_both_frames_and_two_latencies) {
  const device_profile p{"d", 1e9, 1u << 30, 1000, 500, 0.01};
  // (976 + 24 header) / 1000 down + (476 + 24) / 500 up + 2 x 10 ms.
  EXPECT_DOUBLE_EQ(modellet_link_seconds(p, 976, 476), 1.0 + 1.0 + 0.02);
  EXPECT_DOUBLE_EQ(modellet_link_seconds(p, 0, 0), 24.0 / 1000 + 24.0 / 500 + 0.02);
}

TEST(data_parallel, dense_gradients_are_all_reduced_and_touched_rows_all_gathered) {
  auto dense = param("out.w", 10, 4, false);   // 160 bytes
  auto sparse = param("in.w", 100, 4, true);   // 1,600 bytes whole
  sparse.touched_rows = {3, 17, 42};           // 3 x (16 + 4 id) = 60 bytes
  const device_profile d{"d", 1e9, 1u << 30, 200, 100, 0.01};
  std::vector<const device_profile*> ring(4, &d);
  const auto x = plan_gradient_exchange({&dense, &sparse}, ring);
  EXPECT_DOUBLE_EQ(x.allreduce_bytes, 160);
  EXPECT_DOUBLE_EQ(x.allgather_bytes, 60);
  EXPECT_DOUBLE_EQ(x.sparse_whole_bytes, 1600);
  // 2 (n - 1) rounds of bytes / n over the slowest hop (min(up, down) = 100 B/s) plus latency.
  EXPECT_NEAR(x.allreduce_seconds, 6 * (40.0 / 100 + 0.01), 1e-12);
  EXPECT_NEAR(x.allgather_seconds, 3 * (15.0 / 100 + 0.01), 1e-12);
  EXPECT_NEAR(x.seconds(), x.allreduce_seconds + x.allgather_seconds, 1e-12);
  EXPECT_NEAR(x.bytes_per_device, 1.5 * 160 + 0.75 * 60, 1e-9);
  // One device exchanges nothing.
  const auto alone = plan_gradient_exchange({&dense, &sparse}, {&d});
  EXPECT_EQ(alone.seconds(), 0);
  EXPECT_EQ(alone.bytes_per_device, 0);
}

TEST(data_parallel, the_store_reduces_as_the_local_one_and_holds_the_ring_time) {
  std::deque<parameter> a, b;
  for (auto* ps : {&a, &b}) {
    ps->push_back(param("out.w", 10, 4, false));
    ps->push_back(param("in.w", 100, 4, true));
    (*ps)[0].id = 0;
    (*ps)[1].id = 1;
    (*ps)[0].grad[5] = 2;
    (*ps)[1].grad[4 * 17 + 1] = 3;
    (*ps)[1].touched_rows = {17};
  }
  const device_profile d{"d", 1e9, 1u << 30, 200, 100, 0.01};
  std::vector<double> held;
  data_parallel_store dp(std::vector<device_profile>(4, d), [&](double s) { held.push_back(s); });
  local_parameter_store local;
  ASSERT_FALSE(dp.attach(a));
  ASSERT_FALSE(local.attach(b));
  EXPECT_DOUBLE_EQ(dp.reduce_gradients(), local.reduce_gradients());
  EXPECT_DOUBLE_EQ(dp.reduce_gradients(), 13.0);
  std::vector<const device_profile*> ring(4, &d);
  const double step = plan_gradient_exchange(dp.registered(), ring).seconds();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_DOUBLE_EQ(held[0], step);
  EXPECT_GT(step, 2.4);
  EXPECT_EQ(dp.totals().steps, 2);
  EXPECT_DOUBLE_EQ(dp.totals().sum.allreduce_bytes, 2 * 160.0);
  EXPECT_DOUBLE_EQ(dp.totals().sum.allgather_bytes, 2 * 20.0);
}
