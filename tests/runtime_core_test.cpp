// The runtime's pure pieces, without actors: suspicion arithmetic, the
// restart budget, the operand cache and its content keys, fleet files,
// churn schedules.

#include <cstring>
#include <fstream>
#include <set>
#include <tuple>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <gtest/gtest.h>

#include "actors/churn/churn_schedule.hpp"
#include "actors/detector/phi_accrual.hpp"
#include "actors/detector/silence_verdict.hpp"
#include "actors/device/block_cache.hpp"
#include "actors/ps/engine/snapshot_pool.hpp"
#include "actors/ps/engine/snapshot_shelf.hpp"
#include "actors/ps/engine/step_predictor.hpp"
#include "actors/supervisor/restart_budget.hpp"
#include "schema/block_key.hpp"
#include "schema/errors.hpp"
#include "schema/profile.hpp"
#include "schema/tile_codec.hpp"
#include "tests/test_util.hpp"

using namespace cleave;

TEST(phi_accrual, regular_heartbeats_keep_phi_low_and_silence_raises_it) {
  phi_accrual d(0.1, 0.02);
  double t = 0;
  for (int i = 0; i < 50; ++i) d.heartbeat(t += 0.1);
  EXPECT_LT(d.phi(t + 0.1), 1.0);          // on time
  EXPECT_GT(d.phi(t + 0.5), 3.0);          // 5 intervals late: suspect
  EXPECT_GT(d.phi(t + 1.0), 8.0);          // 10 intervals late: dead
  EXPECT_LT(d.phi(t + 0.3), d.phi(t + 0.6));  // monotone in silence
}

TEST(phi_accrual, a_slow_but_regular_device_is_not_suspected) {
  phi_accrual d(0.1, 0.02);
  double t = 0;
  for (int i = 0; i < 100; ++i) d.heartbeat(t += 0.4);  // 4x slower than announced
  EXPECT_NEAR(d.mean_interval(), 0.4, 0.01);
  EXPECT_LT(d.phi(t + 0.45), 3.0);
}

TEST(phi_accrual, jittery_heartbeats_widen_the_tolerance) {
  phi_accrual steady(0.1, 0.001), jittery(0.1, 0.001);
  double a = 0, b = 0;
  for (int i = 0; i < 100; ++i) {
    steady.heartbeat(a += 0.1);
    jittery.heartbeat(b += (i % 2 ? 0.05 : 0.15));
  }
  EXPECT_GT(steady.phi(a + 0.2), jittery.phi(b + 0.2));
}

// A level fed `regular` heartbeats at the options' interval, from time 0; the
// time of its last heartbeat is returned.
static double regular_heartbeats(phi_accrual& level, const detector_options& opts, int regular,
                                 double t = 0) {
  for (int i = 0; i < regular; ++i) level.heartbeat(t += opts.heartbeat_seconds);
  return t;
}

TEST(silence_verdict, a_clean_link_goes_alive_suspect_dead_as_phi_grows) {
  const detector_options opts;
  phi_accrual level(opts.heartbeat_seconds, opts.min_stddev);
  const double last = regular_heartbeats(level, opts, 50);
  EXPECT_EQ(judge_silence(level, last + opts.heartbeat_seconds, opts), silence_verdict::alive);
  // Scan the silence: the verdicts come in order, each once phi says so.
  double suspect_at = -1, dead_at = -1;
  for (double s = 0; s < 5 && dead_at < 0; s += 1e-3) {
    const auto v = judge_silence(level, last + s, opts);
    if (v != silence_verdict::alive && suspect_at < 0) suspect_at = s;
    if (v == silence_verdict::dead) dead_at = s;
  }
  ASSERT_GT(suspect_at, 0);
  ASSERT_GT(dead_at, suspect_at);
  EXPECT_GE(level.phi(last + suspect_at), opts.suspect_phi);
  EXPECT_LT(level.phi(last + suspect_at - 1e-3), opts.suspect_phi);
  // On a clean link phi alone (and the minimum silence) decides death.
  EXPECT_NEAR(dead_at, std::max(opts.dead_min_silence_seconds, 2 * level.longest_interval()), 0.05);
  EXPECT_GE(level.phi(last + dead_at), opts.dead_phi);
}

TEST(silence_verdict, death_waits_twice_the_longest_stall_survived) {
  const detector_options opts;
  phi_accrual level(opts.heartbeat_seconds, opts.min_stddev);
  double t = regular_heartbeats(level, opts, 20);
  level.heartbeat(t += 0.7);  // a retransmission stall, recovered from
  t = regular_heartbeats(level, opts, 20, t);
  ASSERT_NEAR(level.longest_interval(), 0.7, 1e-9);
  // phi says dead long before 1.4 s of silence; the verdict waits.
  EXPECT_GE(level.phi(t + 1.0), opts.dead_phi);
  EXPECT_EQ(judge_silence(level, t + 1.0, opts), silence_verdict::suspect);
  EXPECT_EQ(judge_silence(level, t + 1.39, opts), silence_verdict::suspect);
  EXPECT_EQ(judge_silence(level, t + 1.41, opts), silence_verdict::dead);
}

TEST(silence_verdict, what_stalls_teach_is_capped) {
  detector_options opts;
  phi_accrual level(opts.heartbeat_seconds, opts.min_stddev);
  double t = regular_heartbeats(level, opts, 20);
  level.heartbeat(t += 2.5);  // twice this would be 5 s; the cap is 3 s
  t = regular_heartbeats(level, opts, 20, t);
  EXPECT_EQ(judge_silence(level, t + opts.max_learned_silence_seconds - 0.01, opts),
            silence_verdict::suspect);
  EXPECT_EQ(judge_silence(level, t + opts.max_learned_silence_seconds + 0.01, opts), silence_verdict::dead);
  // A minimum silence longer than the cap wins over it.
  opts.dead_min_silence_seconds = 4;
  EXPECT_EQ(judge_silence(level, t + 3.5, opts), silence_verdict::suspect);
  EXPECT_EQ(judge_silence(level, t + 4.01, opts), silence_verdict::dead);
}

TEST(silence_verdict, a_slow_regular_device_is_alive_and_a_fresh_one_too) {
  const detector_options opts;
  phi_accrual slow(opts.heartbeat_seconds, opts.min_stddev);
  double t = 0;
  for (int i = 0; i < 100; ++i) slow.heartbeat(t += 0.4);
  EXPECT_EQ(judge_silence(slow, t + 0.45, opts), silence_verdict::alive);
  phi_accrual fresh(opts.heartbeat_seconds, opts.min_stddev);  // never heard from: phi is 0
  EXPECT_EQ(judge_silence(fresh, 100, opts), silence_verdict::alive);
}

TEST(restart_budget, allows_r_restarts_in_t_seconds_then_refuses) {
  restart_budget b(3, 10);
  EXPECT_TRUE(b.try_restart(0));
  EXPECT_TRUE(b.try_restart(1));
  EXPECT_TRUE(b.try_restart(2));
  EXPECT_FALSE(b.try_restart(3));
  EXPECT_TRUE(b.try_restart(10.5));  // the first restart left the window
}

TEST(block_cache, evicts_least_recently_used_within_capacity) {
  auto block = [](int64_t n) {
    return cached_block{1, n, std::make_shared<const std::vector<float>>(n, 1.0f), 0, 0, {}};
  };
  block_cache c(100 * sizeof(float));
  c.put(1, block(40));
  c.put(2, block(40));
  ASSERT_NE(c.get(1), nullptr);  // 1 is now the most recent
  c.put(3, block(40));           // evicts 2
  EXPECT_NE(c.get(1), nullptr);
  EXPECT_EQ(c.get(2), nullptr);
  EXPECT_NE(c.get(3), nullptr);
  EXPECT_LE(c.bytes(), c.capacity());
  c.put(4, block(1000));  // larger than the cache: not kept, nothing evicted
  EXPECT_EQ(c.get(4), nullptr);
  EXPECT_EQ(c.size(), 2u);
}

TEST(block_cache, keeps_blocks_for_one_step_only) {
  auto block = [] { return cached_block{1, 4, std::make_shared<const std::vector<float>>(4, 1.0f), 0, 0, {}}; };
  block_cache c(1 << 20);
  c.enter_step(7);
  c.put(1, block());
  c.enter_step(7);
  EXPECT_NE(c.get(1), nullptr);  // the backward pass finds the forward's block
  c.enter_step(8);
  c.put(2, block());
  c.enter_step(7);  // a straggler from the step before: nothing is dropped
  EXPECT_NE(c.get(2), nullptr);
  EXPECT_EQ(c.get(1), nullptr);  // step 8 began without it
  c.enter_step(9);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.bytes(), 0u);
  c.put(3, block());
  c.enter_step(2);  // a PS resumed from an older checkpoint
  EXPECT_EQ(c.size(), 0u);
}

TEST(block_cache, a_lent_window_is_counted_but_lives_as_long_as_the_ps_holds_it) {
  snapshot_pool pool;
  auto snapshot = pool.acquire(64);
  block_cache c(1 << 20);
  c.lend(1, cached_block{4, 4, snapshot, 16, 8, {}});
  EXPECT_EQ(c.bytes(), 16 * sizeof(float));  // the device's memory, though not a copy
  EXPECT_EQ(snapshot.use_count(), 1);        // the cache refers to it, keeps nothing alive
  const cached_block* b = c.get(1);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->held().data, snapshot);
  EXPECT_EQ(b->held().offset, 16);
  // The same values from another snapshot (another PS shard's): either will do.
  auto other = pool.acquire(16);
  c.lend(1, cached_block{4, 4, other, 0, 4, {}});
  EXPECT_EQ(c.bytes(), 16 * sizeof(float));
  snapshot.reset();
  ASSERT_NE(c.get(1), nullptr);
  EXPECT_EQ(c.get(1)->held().data, other);
  EXPECT_EQ(c.get(1)->held().offset, 0);
  other.reset();  // the PS let go of both: the block is gone, its bytes with it
  EXPECT_EQ(c.get(1), nullptr);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.bytes(), 0u);
  // The pool hands the buffer out again: the old window does not see it.
  auto again = pool.acquire(64);
  c.lend(2, cached_block{4, 4, again, 0, 0, {}});
  again.reset();
  EXPECT_EQ(c.get(2), nullptr);
  // A record without values (the PS's mirror of a device's cache) stays.
  c.put(3, cached_block{4, 4, nullptr, 0, 0, {}});
  EXPECT_NE(c.get(3), nullptr);
}

TEST(step_predictor, predicts_each_step_from_the_steps_before_it) {
  step_predictor p(0.5);
  p.observe(1.0, 0.6, 0.5);  // no profile yet: not compared; the PS took 0.4 s
  EXPECT_EQ(p.compared().steps, 0);
  EXPECT_DOUBLE_EQ(p.ps_profile_seconds(), 0.4);
  p.observe(1.3, 0.7, 0.8);  // predicted 0.8 + 0.4; the PS took 0.6 s
  EXPECT_EQ(p.compared().steps, 1);
  EXPECT_DOUBLE_EQ(p.compared().measured_seconds, 1.3);
  EXPECT_DOUBLE_EQ(p.compared().predicted_seconds, 1.2);
  EXPECT_DOUBLE_EQ(p.compared().predicted_device_seconds, 0.8);
  EXPECT_DOUBLE_EQ(p.ps_profile_seconds(), 0.5);  // smoothed: 0.5 * 0.6 + 0.5 * 0.4
  p.observe(2.0, 0.2, 0.1);  // a slow step is predicted from the profile before it
  EXPECT_DOUBLE_EQ(p.compared().predicted_seconds, 1.2 + 0.6);
  p.observe(0.1, 0.5, 0.5);  // waiting longer than the step (clock skew): no negative PS time
  EXPECT_GE(p.ps_profile_seconds(), 0.0);
}

TEST(snapshot_pool, reuses_a_buffer_only_once_nobody_holds_it) {
  snapshot_pool pool(2);
  auto a = pool.acquire(100);
  auto b = pool.acquire(100);
  EXPECT_NE(a, b);  // a is still held
  EXPECT_GE(a->size(), 100u);
  const float* a_data = a->data();
  auto window = std::shared_ptr<const std::vector<float>>(a);  // a device's window
  a.reset();
  EXPECT_NE(pool.acquire(50)->data(), a_data);  // the window still holds it
  window.reset();
  b.reset();
  auto small = pool.acquire(10);  // the smallest free buffer that fits
  EXPECT_GE(small->size(), 10u);
  auto again = pool.acquire(100);
  EXPECT_NE(again, small);
  EXPECT_GE(again->size(), 100u);
  EXPECT_LE(pool.buffers(), 3u);  // nothing new was allocated for them
  small.reset();
  again.reset();
  pool.acquire(1000);  // nothing fits; free buffers beyond 2 are let go
  EXPECT_LE(pool.buffers(), 3u);
}

TEST(snapshot_pool, holds_a_forward_product_s_buffer_until_the_step_ends) {
  snapshot_pool pool(4);
  const float* held = pool.acquire(100, true)->data();  // nobody else holds it
  EXPECT_NE(pool.acquire(100)->data(), held);
  pool.begin_step();
  EXPECT_EQ(pool.acquire(100)->data(), held);  // free again, and reused
  EXPECT_LE(pool.buffers(), 2u);
  // Each acquisition has a count of its own: a reference to an earlier one
  // expires when its holders let go, though the buffer lives on in the pool.
  auto first = pool.acquire(100);
  std::weak_ptr<std::vector<float>> cached = first;
  first.reset();
  auto second = pool.acquire(100);
  EXPECT_TRUE(cached.expired());
  EXPECT_EQ(cached.lock(), nullptr);
}

TEST(snapshot_shelf, a_block_read_by_two_products_of_a_step_is_copied_once) {
  snapshot_shelf shelf;
  std::vector<float> dy(8 * 6);
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i);
  const snapshot_shelf::place place{dy.data(), 8, 6, 6};
  // The copier as the engine's: the block's values into the snapshot; its key.
  auto copier = [&](snapshot_shelf::rect r, uint64_t key) {
    return [&dy, r, key](float* into) {
      const auto [r0, r1, c0, c1] = r;
      if (into != nullptr)
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = c0; j < c1; ++j) into[(i - r0) * 6 + (j - c0)] = dy[i * 6 + j];
      return key;
    };
  };
  const snapshot_shelf::rect top{0, 4, 0, 6}, bottom{4, 8, 0, 6}, across{2, 6, 0, 6};
  auto first = shelf.put(place, top, std::nullopt, copier(top, 11), false);  // dX's A
  auto again = shelf.put(place, top, 11, copier(top, 11), false);            // dW's B, same block
  EXPECT_EQ(again.snapshot, first.snapshot);
  EXPECT_EQ(shelf.copies(), 1u);
  auto other = shelf.put(place, bottom, std::nullopt, copier(bottom, 12), false);
  EXPECT_EQ(other.snapshot, first.snapshot);  // room for it in the same snapshot
  EXPECT_EQ(shelf.snapshots_taken(), 1u);
  EXPECT_EQ((*first.snapshot)[4 * 6 + 1], dy[4 * 6 + 1]);
  // A block cut across copied ones, or the same block with other values (the
  // memory was written since): never written over, a snapshot of its own.
  EXPECT_NE(shelf.put(place, across, 13, copier(across, 13), false).snapshot, first.snapshot);
  auto changed = shelf.put(place, top, std::nullopt, copier(top, 14), false);
  EXPECT_NE(changed.snapshot, first.snapshot);
  EXPECT_EQ(changed.key, 14u);
  EXPECT_EQ(shelf.snapshots_taken(), 3u);
  // Nobody holds a snapshot not held for the step: the shelf does not.
  std::weak_ptr<std::vector<float>> gone = changed.snapshot;
  first = again = other = changed = {};
  EXPECT_TRUE(gone.expired());
  EXPECT_NE(shelf.put(place, top, 14, copier(top, 14), false).snapshot, nullptr);
  EXPECT_EQ(shelf.snapshots_taken(), 4u);
}

TEST(block_key, a_bf16_block_never_shares_an_fp32_block_s_key) {
  // Values that are bf16 already round to themselves: the same bytes, yet
  // the key the bf16 wire sends them under is another, so a device's cache
  // holds the two apart; fp32's key is block_key's own (fp32 runs' keys are
  // as they were).
  std::vector<float> m = {1.0f, -2.0f, 0.5f, 3.0f};
  const uint64_t k = block_key(m.data(), 2, 2, 2);
  EXPECT_EQ(wire_block_key(k, wire_precision::fp32), k);
  EXPECT_NE(wire_block_key(k, wire_precision::bf16), k);
  EXPECT_EQ(wire_block_key(k, wire_precision::bf16), wire_block_key(k, wire_precision::bf16));
}

TEST(block_key, depends_on_content_shape_and_only_the_block) {
  std::vector<float> m(6 * 8);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i);
  std::vector<float> copy(m.begin() + 8, m.begin() + 8 + 2 * 8);  // rows 1-2, contiguous
  // The same block read in place with a stride and from a contiguous copy.
  EXPECT_EQ(block_key(m.data() + 8 + 2, 2, 4, 8), block_key(copy.data() + 2, 2, 4, 8));
  EXPECT_NE(block_key(m.data(), 2, 4, 8), block_key(m.data(), 4, 2, 8));
  const uint64_t before = block_key(m.data(), 3, 8, 8);
  m[3 * 8] = -1;  // outside the block
  EXPECT_EQ(block_key(m.data(), 3, 8, 8), before);
  m[2 * 8 + 7] = -1;  // inside
  EXPECT_NE(block_key(m.data(), 3, 8, 8), before);
  // Hashing while copying gives the same key and an exact copy at the
  // destination's stride, leaving the rest of the destination alone; a
  // row longer than one 16-float stripe has a tail.
  std::vector<float> wide(3 * 40);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = 0.5f * static_cast<float>(i);
  std::vector<float> dst(4 * 50, 7.0f);
  EXPECT_EQ(block_key(wide.data() + 40 + 1, 2, 37, 40, dst.data() + 50 + 2, 50),
            block_key(wide.data() + 40 + 1, 2, 37, 40));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 50; ++c) {
      const bool inside = r >= 1 && r <= 2 && c >= 2 && c < 39;
      EXPECT_EQ(dst[r * 50 + c], inside ? wide[r * 40 + 1 + (c - 2)] : 7.0f) << r << "," << c;
    }
}

TEST(fleet_file, presets_overrides_counts_and_refusals) {
  cleave::testing::scratch_dir dir;
  auto write = [&](const std::string& text) {
    std::ofstream(dir.file("f.json")) << text;
    return read_fleet_file(dir.file("f.json"));
  };
  auto ok = write(R"({"devices": [{"preset": "phone", "count": 3},
                                  {"preset": "laptop", "flops": 5e10},
                                  {"name": "rpi", "flops": 2e9, "memory_bytes": 1e9,
                                   "downlink": 1e7, "uplink": 2e6, "latency": 0.005}]})");
  ASSERT_TRUE(ok) << describe(ok.error());
  ASSERT_EQ(ok->size(), 5u);
  EXPECT_EQ((*ok)[0].name, "phone");
  EXPECT_EQ((*ok)[3].flops, 5e10);
  EXPECT_EQ((*ok)[4].name, "rpi");
  for (auto [text, want] : {std::pair{"not json", "not valid JSON"},
                            {R"({"devices": []})", "no devices"},
                            {R"({"devices": [{"preset": "toaster"}]})", "unknown device preset"},
                            {R"({"devices": [{"preset": "phone", "flops": -1}]})", "flops"},
                            {R"({"devices": [{"preset": "phone", "count": 1e9}]})", "count"},
                            {R"({"devices": [{"flops": 1e9}]})", "needs a preset or a name"}}) {
    auto bad = write(text);
    ASSERT_FALSE(bad) << text;
    EXPECT_NE(describe(bad.error()).find(want), std::string::npos) << describe(bad.error());
    EXPECT_NE(describe(bad.error()).find(dir.file("f.json")), std::string::npos);
  }
}

TEST(tile_codec, round_trips_and_refuses_malformed_frames) {
  tile_task t;
  t.key = {7, 3, 2};
  auto make = [](uint64_t key, int64_t rows, int64_t cols, bool trans, std::vector<float> data) {
    operand op;
    op.key = key;
    op.rows = rows;
    op.cols = cols;
    op.trans = trans;
    op.data = std::move(data);
    return op;
  };
  t.a = make(11, 2, 3, true, {1, 2, 3, 4, 5, 6});
  t.b = make(12, 3, 2, false, {});  // cached: no payload
  std::vector<char> buf(encoded_size(t));
  encode(t, buf.data());
  auto back = decode_task(buf.data(), buf.size());
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->key, t.key);
  EXPECT_EQ(back->a.data, t.a.data);
  EXPECT_TRUE(back->a.trans);
  EXPECT_TRUE(back->b.data.empty());
  EXPECT_EQ(back->b.key, 12u);
  // Truncated, padded, and a shape that promises more than the frame holds.
  EXPECT_FALSE(decode_task(buf.data(), buf.size() - 1));
  buf.push_back(0);
  EXPECT_FALSE(decode_task(buf.data(), buf.size()));
  buf.pop_back();
  int64_t huge = int64_t{1} << 40;
  std::memcpy(buf.data() + 16 + 8, &huge, sizeof(huge));  // operand a's rows
  auto bad = decode_task(buf.data(), buf.size());
  ASSERT_FALSE(bad);
  EXPECT_NE(describe(bad.error()).find("invalid shape"), std::string::npos);

  tile_result r;
  r.key = {1, 2, 3};
  r.device = 4;
  r.rows = 2;
  r.cols = 2;
  r.data = {1, 2, 3, 4};
  std::vector<char> rb(encoded_size(r));
  encode(r, rb.data());
  auto rback = decode_result(rb.data(), rb.size());
  ASSERT_TRUE(rback);
  EXPECT_EQ(rback->data, r.data);
  EXPECT_EQ(rback->device, 4);
  EXPECT_FALSE(decode_result(rb.data(), rb.size() - 4));
}

// Found by tests/fuzz/fuzz_tile: a block with no elements (0 x N) whose flag
// says it carries values, and an empty result, once memcpy'd to or from a
// null data() (undefined behaviour, reported by UBSan).
TEST(tile_codec, empty_blocks_decode_and_round_trip) {
  tile_task t;
  t.a.rows = 0;
  t.a.cols = 5;
  t.b.rows = 3;
  t.b.cols = 0;
  std::vector<char> buf(encoded_size(t));
  encode(t, buf.data());
  buf[16 + 8 + 8 + 8 + 1] = 1;  // operand a: "values follow", none do
  auto back = decode_task(buf.data(), buf.size());
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_TRUE(back->a.data.empty());
  EXPECT_EQ(back->a.cols, 5);

  tile_result r;
  r.rows = 0;
  r.cols = 7;
  std::vector<char> rb(encoded_size(r));
  encode(r, rb.data());
  auto rback = decode_result(rb.data(), rb.size());
  ASSERT_TRUE(rback) << describe(rback.error());
  EXPECT_TRUE(rback->data.empty());
  EXPECT_EQ(rback->cols, 7);
}

// An in-process operand is a window of the PS's snapshot; on the wire (bulk
// frame or CAF serialisation) it must be exactly the block's values.
TEST(operand, a_snapshot_window_travels_as_its_block) {
  auto snap = std::make_shared<const std::vector<float>>(std::vector<float>{
    0, 1, 2, 3,  //
    4, 5, 6, 7,  //
    8, 9, 10, 11});
  operand window;
  window.key = 5;
  window.rows = 2;
  window.cols = 2;
  window.shared = snap;
  window.offset = 5;  // rows 1-2, columns 1-2
  window.ld = 4;
  ASSERT_TRUE(window.window_valid());
  tile_task t;
  t.a = window;
  t.b = window;
  std::vector<char> buf(encoded_size(t));
  encode(t, buf.data());
  auto back = decode_task(buf.data(), buf.size());
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->a.data, (std::vector<float>{5, 6, 9, 10}));
  EXPECT_EQ(back->a.shared, nullptr);

  caf::actor_system_config cfg;
  add_cleave_message_types(cfg);
  caf::actor_system sys{cfg};
  std::vector<char> bytes;
  caf::binary_serializer sink{sys, bytes};
  ASSERT_FALSE(sink(window));
  operand received;
  caf::binary_deserializer source{sys, bytes};
  ASSERT_FALSE(source(received));
  EXPECT_EQ(received.data, (std::vector<float>{5, 6, 9, 10}));
  EXPECT_EQ(received.shared, nullptr);

  operand outside = window;  // a window past the snapshot's end is refused
  outside.offset = 7;
  EXPECT_FALSE(outside.window_valid());
  outside.offset = 5;
  outside.ld = 1;  // rows overlapping (ld < cols)
  EXPECT_FALSE(outside.window_valid());
}

TEST(churn_schedule, a_file_gives_its_events_at_their_steps) {
  cleave::testing::scratch_dir dir;
  std::ofstream(dir.file("c.json")) << R"({"events": [
    {"step": 3, "action": "die", "device": 1, "after_seconds": 0.01},
    {"step": 3, "action": "join", "profile": "phone"},
    {"step": 5, "action": "slow", "device": 4, "factor": 8},
    {"step": 9, "action": "hang", "device": 0}]})";
  auto s = churn_schedule::from_file(dir.file("c.json"), 4);
  ASSERT_TRUE(s) << describe(s.error());
  EXPECT_TRUE(s->due(1).empty());
  auto at3 = s->due(3);
  ASSERT_EQ(at3.size(), 2u);
  EXPECT_EQ(at3[0].action, churn_action::die);
  EXPECT_EQ(at3[0].device, 1);
  EXPECT_DOUBLE_EQ(at3[0].after_seconds, 0.01);
  EXPECT_EQ(at3[1].action, churn_action::join);
  EXPECT_EQ(at3[1].device, 4);  // the next fleet index
  EXPECT_EQ(at3[1].profile.name, "phone");
  auto at5 = s->due(5);
  ASSERT_EQ(at5.size(), 1u);
  EXPECT_DOUBLE_EQ(at5[0].factor, 8);
  EXPECT_EQ(s->due(9).size(), 1u);
  EXPECT_TRUE(s->due(10).empty());
}

TEST(churn_schedule, bad_files_are_refused_with_the_event_named) {
  cleave::testing::scratch_dir dir;
  auto read = [&](const std::string& text) {
    std::ofstream(dir.file("c.json")) << text;
    return churn_schedule::from_file(dir.file("c.json"), 4);
  };
  for (auto [text, want] : {
         std::pair{"[", "not valid JSON"},
         {R"({"churn": []})", "\"events\" array"},
         {R"({"events": [{"step": 1, "action": "explode", "device": 0}]})", "action must be"},
         {R"({"events": [{"step": 0, "action": "die", "device": 0}]})", "step must be"},
         {R"({"events": [{"step": 2, "action": "die", "device": 9}]})", "does not exist"},
         {R"({"events": [{"step": 2, "action": "die", "device": 1},
                         {"step": 3, "action": "hang", "device": 1}]})", "events[1]: device 1"},
         {R"({"events": [{"step": 5, "action": "die", "device": 1},
                         {"step": 3, "action": "die", "device": 2}]})", "backwards"},
         {R"({"events": [{"step": 1, "action": "slow", "device": 1}]})", "factor"},
         {R"({"events": [{"step": 1, "action": "join", "profile": "toaster"}]})", "preset"},
         {R"({"events": [{"step": 1, "action": "die", "device": 1, "after_seconds": -1}]})",
          "after_seconds"}}) {
    auto bad = read(text);
    ASSERT_FALSE(bad) << text;
    EXPECT_NE(describe(bad.error()).find(want), std::string::npos) << describe(bad.error());
    EXPECT_NE(describe(bad.error()).find(dir.file("c.json")), std::string::npos);
  }
}

TEST(churn_schedule, a_seeded_rate_is_reproducible_and_keeps_one_device_well) {
  auto draw = [](uint64_t seed) {
    auto s = churn_schedule::random(0.5, seed, 3, *preset_profile("vm"));
    std::vector<std::tuple<int64_t, int, int32_t>> out;
    for (int64_t step = 1; step <= 400; ++step)
      for (const auto& ev : s.due(step))
        out.emplace_back(ev.step, static_cast<int>(ev.action), ev.device);
    return out;
  };
  const auto a = draw(11);
  EXPECT_EQ(a, draw(11));
  EXPECT_NE(a, draw(12));
  // At most about rate x steps events (fewer: one that would leave no
  // healthy device is dropped), every action drawn.
  EXPECT_GT(a.size(), 50u);
  EXPECT_LT(a.size(), 280u);
  std::set<int> actions;
  for (auto& e : a) actions.insert(std::get<1>(e));
  EXPECT_EQ(actions.size(), 4u);
  // Replaying the bookkeeping: no event aims at a dead device, joins get
  // fresh indices, and at least one device is always alive and well.
  std::set<int32_t> alive{0, 1, 2}, well{0, 1, 2};
  int32_t next = 3;
  for (auto [step, action, dev] : a) {
    if (action == static_cast<int>(churn_action::join)) {
      EXPECT_EQ(dev, next++);
      alive.insert(dev);
      well.insert(dev);
      continue;
    }
    EXPECT_TRUE(alive.count(dev)) << "step " << step << " device " << dev;
    well.erase(dev);
    if (action == static_cast<int>(churn_action::die)) alive.erase(dev);
    EXPECT_GE(well.size(), 1u);
  }
}
