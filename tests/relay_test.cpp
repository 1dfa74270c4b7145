// The relay tier (issue: an operand leaves the PS once per relay): the
// fleet file's relays, a relay's store and fetches, the planner's ledger,
// and the simulator counting each block once per relay on the PS's link.

#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "actors/planner/grid_search.hpp"
#include "actors/planner/live_relays.hpp"
#include "actors/planner/relay_ledger.hpp"
#include "actors/simulator/batch_sim.hpp"
#include "actors/simulator/cleave_sim.hpp"
#include "actors/simulator/relay_tier.hpp"
#include "schema/errors.hpp"
#include "schema/fleet_relays.hpp"
#include "training/models/model.hpp"

using namespace cleave;

namespace {

device_profile profile(double flops, double down, double up, double latency) {
  device_profile p;
  p.name = "test";
  p.flops = flops;
  p.memory_bytes = 1'000'000'000;
  p.downlink = down;
  p.uplink = up;
  p.latency = latency;
  return p;
}

relay_profile relay(double link, uint64_t memory = uint64_t{1} << 30) {
  relay_profile r;
  r.name = "r";
  r.downlink = r.uplink = link;
  r.fanout = 1e12;
  r.latency = 0;
  r.memory_bytes = memory;
  return r;
}

}  // namespace

TEST(fleet_relays, a_device_entry_is_spread_over_its_relays_in_runs) {
  const char* text = R"({"relays": [{"name": "city", "count": 2, "downlink": 1e9},
                                    {"name": "campus", "fanout": 1e9}],
                         "devices": [{"preset": "phone", "count": 4, "relay": "city"},
                                     {"preset": "edge", "count": 1},
                                     {"preset": "vm", "count": 2, "relay": "campus"}]})";
  auto r = parse_fleet_relays(text, "f.json", 7);
  ASSERT_TRUE(r) << describe(r.error());
  ASSERT_EQ(r->relays.size(), 3u);
  EXPECT_EQ(r->relays[0].name, "city-0");
  EXPECT_EQ(r->relays[2].name, "campus");
  EXPECT_DOUBLE_EQ(r->relays[1].downlink, 1e9);
  EXPECT_EQ(r->relay_of, (std::vector<int32_t>{0, 0, 1, 1, -1, 2, 2}));
}

TEST(fleet_relays, refuses_what_it_cannot_place_with_a_reason_naming_the_file) {
  auto unknown = parse_fleet_relays(R"({"relays": [], "devices": [{"preset": "phone", "relay": "x"}]})",
                                    "f.json", 1);
  ASSERT_FALSE(unknown);
  EXPECT_NE(describe(unknown.error()).find("f.json: devices[0]: no relay entry named 'x'"), std::string::npos);
  auto slow = parse_fleet_relays(R"({"relays": [{"name": "a", "downlink": -1}], "devices": []})", "f.json", 0);
  ASSERT_FALSE(slow);
  EXPECT_NE(describe(slow.error()).find("downlink must be finite and positive"), std::string::npos);
  auto twice = parse_fleet_relays(R"({"relays": [{"name": "a"}, {"name": "a"}], "devices": []})", "f.json", 0);
  EXPECT_FALSE(twice);
  auto many = parse_fleet_relays(R"({"relays": [{"name": "a", "count": 1e9}], "devices": []})", "f.json", 0);
  EXPECT_FALSE(many);
  EXPECT_FALSE(even_relays(5, relay(1e9), 4)) << "more relays than devices";
  auto even = even_relays(2, relay(1e9), 5);
  ASSERT_TRUE(even);
  EXPECT_EQ(even->relay_of, (std::vector<int32_t>{0, 0, 0, 1, 1}));
}

TEST(relay_store, evicts_the_least_recently_used_bytes) {
  relay_store s(100);
  s.put({1, 40});
  s.put({2, 40});
  EXPECT_TRUE(s.touch(1));  // 2 is now the oldest
  s.put({3, 40});
  EXPECT_TRUE(s.touch(1));
  EXPECT_FALSE(s.touch(2));
  EXPECT_TRUE(s.touch(3));
  s.put({4, 200});  // larger than the store: not kept
  EXPECT_FALSE(s.touch(4));
  EXPECT_EQ(s.bytes(), 80u);
}

TEST(relay_tier, a_block_two_devices_need_is_fetched_once) {
  relay_tier tier({relay(1e9)}, 1);
  const relay_block a{7, 100}, b{8, 50};
  const relay_block first[] = {a, b};
  const relay_block second[] = {a};
  EXPECT_EQ(tier.need(0, 0, 0, first, 2, 0), 2u);
  EXPECT_EQ(tier.need(0, 0, 1, second, 1, 1), 1u);
  relay_block f;
  uint64_t priority = 0;
  ASSERT_TRUE(tier.next_fetch(0, 0, f, priority));
  EXPECT_EQ(f.key, 7u);
  EXPECT_FALSE(tier.next_fetch(0, 0, f, priority)) << "one fetch at a time";
  tier.fetched(0, 0);
  ASSERT_TRUE(tier.next_fetch(0, 0, f, priority));
  EXPECT_EQ(f.key, 8u);
  tier.fetched(0, 0);
  EXPECT_FALSE(tier.next_fetch(0, 0, f, priority)) << "block 7 is not fetched twice";
  std::vector<uint32_t> ready;
  tier.landed(0, 0, ready);
  EXPECT_EQ(ready, std::vector<uint32_t>{1});  // entry 0 still waits for block 8
  tier.landed(0, 0, ready);
  EXPECT_EQ(ready, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(tier.counts()[0].bytes_in, 150u);
  EXPECT_EQ(tier.counts()[0].unique_bytes, 150u);
  EXPECT_EQ(tier.need(0, 0, 2, second, 1, 2), 0u) << "now in the store";
}

TEST(relay_ledger, a_block_leaves_the_ps_once_per_relay) {
  relay_ledger ledger;
  ledger.begin(2, 4, 4);
  EXPECT_EQ(ledger.send(0, true, true, 0, 0, 100, 10, 1), 110u);
  EXPECT_EQ(ledger.ps_bytes(0, true, true, 0, 1, 100, 10), 10u) << "A block 0 is at relay 0";
  EXPECT_EQ(ledger.send(0, true, true, 0, 1, 100, 10, 1), 10u);
  EXPECT_EQ(ledger.send(1, true, true, 0, 1, 100, 10, 1), 110u) << "relay 1 has nothing yet";
  EXPECT_EQ(ledger.send(-1, true, true, 0, 1, 100, 10, 1), 110u) << "a direct device gets both";
  std::vector<relay_profile> relays{relay(100), relay(1000)};
  EXPECT_DOUBLE_EQ(ledger.link_seconds(relays), 120.0 / 100);
  ledger.begin(2, 4, 4);  // a new grid: nothing sent
  EXPECT_EQ(ledger.ps_bytes(0, true, true, 0, 0, 100, 10), 110u);
}

// Two devices behind one relay read the same B block: the PS sends it once.
TEST(batch_sim, a_relay_takes_a_shared_block_from_the_ps_once) {
  plan p;
  p.local = false;
  p.problem.m = 200;
  p.problem.n = 100;
  p.problem.k = 100;
  p.predicted_seconds = 1;
  for (int d = 0; d < 2; ++d) {
    assignment a;
    a.t = {100 * d, 100 * (d + 1), 0, 100, 0, 100};
    a.device = d;
    p.tiles.push_back(a);
  }
  const std::vector<product_operands> ops{{{1, false}, {2, false}}};
  const uint64_t block = 100 * 100 * 4;
  for (bool relayed : {false, true}) {
    sim_fleet fleet({profile(1e9, 1e6, 5e5, 0.01), profile(1e9, 1e6, 5e5, 0.01)},
                    relayed ? std::vector<int32_t>{0, 0} : std::vector<int32_t>{});
    schedule_options o;
    o.speculate_factor = 0;
    o.tile_timeout_seconds = 1e9;
    batch_sim sim({{1e6, 1e6}}, o, 1e9, 0.1, ps_link_model::fair, false,
                  relayed ? std::vector<relay_profile>{relay(1e6)} : std::vector<relay_profile>{});
    churn_feed none;
    batch_totals totals;
    const gemm_batch_sim batch{{{&p}, ops}};
    const auto issued = sim.issue(batch, fleet);
    auto end = sim.run(0, batch, issued, fleet, none, totals);
    ASSERT_TRUE(end);
    EXPECT_EQ(totals.shard_bytes_down[0], relayed ? 3 * block : 4 * block);
    EXPECT_EQ(fleet.devices()[0].bytes_down, 2 * block) << "each device still gets both blocks";
    if (relayed) {
      EXPECT_EQ(sim.relays().counts()[0].bytes_out, 4 * block);
      // The relay fetches A0, B, A1 one after another at 1e6 B/s, and the
      // last device's download (2 blocks at its 1e6 B/s) starts once A1 is there.
      EXPECT_GE(*end, 3.0 * block / 1e6 + 2.0 * block / 1e6);
    }
  }
}

// A step behind relays: the PS's egress counts each block once per relay
// that needs it (exactly, with stores that never evict), below what the
// devices received, and a small store makes relays fetch blocks again.
TEST(simulate_cleave, relays_send_each_block_once_per_relay) {
  sim_config cfg;
  cfg.model = *gpt_preset("small", 256, 64);
  cfg.batch = 4;
  cfg.steps = 1;
  for (int i = 0; i < 8; ++i) cfg.fleet.push_back(profile(1e11, 1e8, 5e7, 0.001));
  cfg.planner.ps_flops = 1e9;
  cfg.shards = {{5e7, 5e7}};
  auto relayed_with = [&](uint64_t memory) {
    sim_config c = cfg;
    auto relays = even_relays(2, relay(1e9, memory), 8);
    EXPECT_TRUE(relays);
    c.relays = *relays;
    c.planner.relays = c.relays.relays;
    churn_feed quiet;
    return simulate_cleave(c, quiet);
  };
  auto relayed = relayed_with(uint64_t{1} << 30);
  ASSERT_TRUE(relayed);
  uint64_t ps = 0, unique = 0, fetched = 0;
  for (auto b : relayed->totals.shard_bytes_down) ps += b;
  for (const auto& c : relayed->relays) {
    unique += c.unique_bytes;
    fetched += c.bytes_in;
  }
  EXPECT_GT(relayed->totals.tiles, 0u);
  EXPECT_EQ(ps, fetched) << "every device is behind a relay";
  EXPECT_EQ(fetched, unique);
  uint64_t devices_got = 0;
  for (const auto& d : relayed->devices) devices_got += d.bytes_down;
  EXPECT_LT(ps, devices_got) << "the relays served blocks they fetched once to several devices";
  auto small = relayed_with(uint64_t{1} << 20);
  ASSERT_TRUE(small);
  uint64_t small_unique = 0, small_fetched = 0;
  for (const auto& c : small->relays) {
    small_unique += c.unique_bytes;
    small_fetched += c.bytes_in;
  }
  EXPECT_GT(small_fetched, small_unique) << "a 1 MiB store evicts blocks read again";
}

// Behind relays the planner counts a block once per relay on the PS's link.
TEST(planner, relays_let_a_plan_send_the_ps_less) {
  gemm_problem g;
  g.m = 2048;
  g.n = 1024;
  g.k = 1024;
  std::vector<device_view> devices;
  for (int i = 0; i < 32; ++i) devices.push_back(device_view{i, profile(1e12, 1e8, 1e8, 0.001), 0, 0, i / 8});
  planner_config cfg;
  cfg.ps_flops = 1e9;
  cfg.ps_egress = cfg.ps_ingress = 1e8;
  const plan direct = make_plan(g, devices, cfg);
  for (int r = 0; r < 4; ++r) cfg.relays.push_back(relay(1e10));
  const plan relayed = make_plan(g, devices, cfg);
  ASSERT_FALSE(direct.local);
  ASSERT_FALSE(relayed.local);
  EXPECT_LT(relayed.bytes_down, direct.bytes_down);
  EXPECT_LT(relayed.predicted_seconds, direct.predicted_seconds);
}

// A live fleet's ids follow the order its devices joined in, which
// interleaves the relays; the simulator's follow the fleet file's runs. Both
// must plan alike: the same grid, and each relay the same tiles.
TEST(planner, a_plan_does_not_depend_on_how_ids_interleave_the_relays) {
  gemm_problem g;
  g.m = 512;
  g.n = 256;
  g.k = 1024;
  planner_config cfg;
  cfg.ps_flops = 5e8;
  cfg.ps_egress = cfg.ps_ingress = 2.4e7;
  cfg.pipelined_devices = true;
  for (const char* name : {"a", "b"}) {
    cfg.relays.push_back(relay(1.2e8, 2'000'000'000));
    cfg.relays.back().name = name;
    cfg.relays.back().fanout = 1.2e8;
  }
  auto plan_for = [&](const std::vector<int32_t>& relay_of) {
    std::vector<device_view> devices;
    for (int32_t i = 0; i < 6; ++i)
      devices.push_back(device_view{i, profile(3e10, 1.2e7, 4.8e6, 1e-4), 0, 0, relay_of[static_cast<size_t>(i)]});
    const plan p = make_plan(g, devices, cfg);
    std::map<int32_t, size_t> tiles_of_relay;
    for (const auto& a : p.tiles) ++tiles_of_relay[relay_of[static_cast<size_t>(a.device)]];
    return std::make_tuple(p.grid_m, p.grid_n, p.grid_k, p.predicted_seconds, tiles_of_relay);
  };
  const auto runs = plan_for({0, 0, 0, 1, 1, 1});
  EXPECT_EQ(plan_for({1, 0, 0, 0, 1, 1}), runs);
  EXPECT_EQ(plan_for({0, 1, 0, 1, 0, 1}), runs);
}

TEST(planner, a_spread_prefix_takes_devices_evenly_from_every_relay) {
  std::vector<device_view> ranked;
  for (int i = 0; i < 6; ++i) ranked.push_back(device_view{i, profile(1e12, 1e8, 1e8, 0), 0, 0, i < 4 ? 0 : 1});
  ranked.push_back(device_view{6, profile(1e12, 1e8, 1e8, 0), 0, 0, -1});
  std::vector<int32_t> ids;
  for (const auto& d : spread_over_relays(ranked)) ids.push_back(d.id);
  // First of each group (direct devices are a group), then the second of each, ...
  EXPECT_EQ(ids, (std::vector<int32_t>{6, 0, 4, 1, 5, 2, 3}));
}

namespace {

// A live fleet's relays: those its members joined through, in name order,
// each with the store it declared.
TEST(live_relays, the_relays_members_joined_through_in_name_order) {
  std::map<int32_t, fleet_member> members;
  auto add = [&](int32_t id, const std::string& relay, uint64_t store) {
    fleet_member m;
    m.id = id;
    m.profile = profile(1e10, 1e7, 1e7, 0.01);
    m.relay = relay_seat{relay, store, 1e9, 5e8, 1e10, 0.005};
    members[id] = m;
  };
  add(0, "town", 1 << 20);
  add(1, "", 0);
  add(2, "city", 2 << 20);
  add(3, "town", 1 << 20);
  const auto tier = live_relays(members);
  ASSERT_EQ(tier.relays.size(), 2u);
  EXPECT_EQ(tier.relays[0].name, "city");
  EXPECT_EQ(tier.relays[0].memory_bytes, 2u << 20);
  EXPECT_EQ(tier.relays[0].downlink, 1e9);
  EXPECT_EQ(tier.relays[0].uplink, 5e8);
  EXPECT_EQ(tier.relays[0].fanout, 1e10);
  EXPECT_EQ(tier.relays[1].name, "town");
  EXPECT_EQ(tier.relay_of(members[0]), 1);
  EXPECT_EQ(tier.relay_of(members[1]), -1);
  EXPECT_EQ(tier.relay_of(members[2]), 0);
  EXPECT_TRUE(live_relays({}).relays.empty());
}

}  // namespace
