// The edge at fleet scale: the heartbeat interval's rule and what the
// detector makes of a stretched interval, the edge's per-connection sizing,
// and the heartbeat wait the detector measures.

#include <chrono>
#include <cmath>
#include <thread>

#include <caf/all.hpp>
#include <gtest/gtest.h>

#include "actors/detector/delay_histogram.hpp"
#include "actors/detector/detection_time.hpp"
#include "actors/detector/detector_actor.hpp"
#include "actors/detector/heartbeat_interval.hpp"
#include "actors/detector/phi_accrual.hpp"
#include "actors/gateway/edge_gateway.hpp"

namespace cleave {
namespace {

TEST(heartbeat_interval, follows_the_edges_cap_over_the_budget) {
  EXPECT_DOUBLE_EQ(fleet_heartbeat_seconds(0.1, 256, default_heartbeat_rate), 0.1);  // the default edge
  EXPECT_DOUBLE_EQ(fleet_heartbeat_seconds(0.1, 100, 2560), 0.1);                   // never below the base
  EXPECT_DOUBLE_EQ(fleet_heartbeat_seconds(0.1, 1000, 2000), 0.5);
  EXPECT_DOUBLE_EQ(fleet_heartbeat_seconds(0.1, 5000, 2000), 2.5);
  EXPECT_DOUBLE_EQ(fleet_heartbeat_seconds(0.1, 100000, 2000), max_heartbeat_seconds);  // under the idle timeout
  EXPECT_DOUBLE_EQ(fleet_heartbeat_seconds(0.3, 1000, 4000), 0.3);  // a longer base stays
  EXPECT_DOUBLE_EQ(fleet_heartbeat_seconds(0.1, 5000, 0), 0.1);     // no budget
  // The budget holds wherever the ceiling does not bind.
  for (size_t n : {257u, 1000u, 5000u, 12000u})
    EXPECT_LE(fleet_heartbeat_rate(fleet_heartbeat_seconds(0.1, n, 2560), n), 2560 * (1 + 1e-12)) << n;
}

TEST(heartbeat_interval, the_detectors_spread_floor_scales_and_the_base_is_unchanged) {
  const detector_options base;
  const auto at_base = detector_for_interval(base, 0.1);
  EXPECT_DOUBLE_EQ(at_base.min_stddev, base.min_stddev);
  EXPECT_DOUBLE_EQ(at_base.heartbeat_seconds, 0.1);
  const auto stretched = detector_for_interval(base, 2.0);
  EXPECT_DOUBLE_EQ(stretched.heartbeat_seconds, 2.0);
  EXPECT_DOUBLE_EQ(stretched.min_stddev, min_stddev_fraction * 2.0);
}

// A silent device is still suspected within a bounded time, the same
// multiple of the interval at every scale, and a device late by less than
// half an interval is not.
TEST(heartbeat_interval, suspicion_stays_bounded_and_proportional) {
  for (double interval : {0.1, 0.39, 1.95, max_heartbeat_seconds}) {
    const auto opts = detector_for_interval({}, interval);
    const double detect = detection_seconds(opts);
    EXPECT_GT(detect, 0.5 * interval) << interval;
    EXPECT_LT(detect, 1.25 * interval + opts.check_seconds) << interval;
    phi_accrual level(opts.heartbeat_seconds, opts.min_stddev);
    for (int i = 0; i <= 200; ++i) level.heartbeat(i * interval);
    const double last = 200 * interval;
    EXPECT_LT(level.phi(last + 1.5 * interval), opts.suspect_phi) << interval;  // half an interval late
    EXPECT_GE(level.phi(last + 2.0 * interval), opts.suspect_phi) << interval;  // a whole one
  }
}

TEST(edge_sizing, read_buffers_follow_the_cap_within_a_fixed_budget) {
  EXPECT_EQ(edge_read_chunk_bytes(256), uint64_t{1} << 20);  // as before at the default cap
  EXPECT_EQ(edge_read_chunk_bytes(1000), edge_read_budget_bytes / 1000);
  EXPECT_EQ(edge_read_chunk_bytes(5000), uint64_t{64} << 10);  // the floor
  for (size_t n : {1u, 256u, 1000u, 4096u})
    EXPECT_LE(n * edge_read_chunk_bytes(n), edge_read_budget_bytes) << n;
  edge_options eo;
  eo.max_connections = 5000;
  const auto bo = edge_channel_options(eo);
  EXPECT_EQ(bo.max_connections, 5000u);
  EXPECT_EQ(bo.chunk_bytes, uint64_t{64} << 10);
  EXPECT_LE(bo.tls_read_bytes, bo.chunk_bytes);
  EXPECT_EQ(bo.lazy_credit_bytes, edge_lazy_credit_bytes);
  // The credit an idle edge holds back never blocks a device's largest frame.
  EXPECT_GE(bo.receive_window, transport::frame_cost(eo.max_tile_bytes) + bo.lazy_credit_bytes);
}

TEST(delay_histogram, records_and_reads_quantiles_as_bucket_bounds) {
  delay_histogram h;
  EXPECT_EQ(h.quantile(0.99), 0);
  for (int i = 0; i < 98; ++i) h.record(3e-6);
  h.record(0.003);
  h.record(-1);  // a clock step backwards counts as no wait
  EXPECT_EQ(h.total, 100u);
  EXPECT_DOUBLE_EQ(h.quantile(0.5), 1e-5);
  EXPECT_DOUBLE_EQ(h.quantile(0.99), 1e-5);
  EXPECT_DOUBLE_EQ(h.quantile(1.0), 5e-3);
  h.record(60);
  EXPECT_TRUE(std::isinf(h.quantile(1.0)));
  EXPECT_EQ(h.counts.back(), 1u);
}

// An edge heartbeat carries the time the edge read it: the detector takes
// the device as heard then, and counts the wait. It also carries the device
// process's peak memory, of which the detector keeps the largest said.
TEST(detector, judges_an_edge_heartbeat_by_its_arrival_and_counts_the_wait) {
  caf::actor_system_config cfg;
  add_detector_message_types(cfg);
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto opts = detector_for_interval({}, 0.2);
  auto detector = sys.spawn(detector_actor, opts);
  auto device = sys.spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
  self->send(detector, watch_atom::value, int32_t{7}, device);
  const auto steady_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
  };
  for (int i = 0; i < 5; ++i) {
    // Read at the edge 30 ms before the detector sees it.
    const uint64_t peak = i == 3 ? 0 : uint64_t{1000} * static_cast<uint64_t>(1 + i);  // 0: unsaid
    self->send(detector, heartbeat_atom::value, int32_t{7}, steady_ns() - int64_t{30'000'000}, peak);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  delay_histogram h;
  self->request(detector, std::chrono::seconds(5), caf::get_atom::value, heartbeat_atom::value)
    .receive([&](const delay_histogram& got) { h = got; }, [](caf::error&) {});
  EXPECT_EQ(h.total, 5u);
  EXPECT_GE(h.quantile(0.5), 0.03);  // the 30 ms were counted
  EXPECT_LE(h.quantile(0.5), 0.2);
  std::vector<device_health> health;
  self->request(detector, std::chrono::seconds(5), caf::get_atom::value)
    .receive([&](std::vector<device_health>& got) { health = std::move(got); }, [](caf::error&) {});
  ASSERT_EQ(health.size(), 1u);
  EXPECT_FALSE(health[0].suspected);
  EXPECT_EQ(health[0].peak_rss_bytes, 5000u);
  self->send_exit(detector, caf::exit_reason::user_shutdown);
  self->send_exit(device, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace cleave
