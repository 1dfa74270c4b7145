// Devices fed by shard processes: the welcome that names the shards' edges
// (schema/edge_codec.hpp), the job's proof a shard's edge admits devices by
// (schema/job_proof.hpp), the fleet request (schema/
// shard_fleet_codec.hpp) and the stats answer's device counts. Each
// round-trips; every truncation, lying count or value out of range is an
// error, never a crash or an allocation past the frame. Through a real
// gateway: a join with the proof is welcomed, one without it or with a
// forged one is refused before the planner sees it, and a device whose
// shard edge cannot be reached serves the others and dials it again.

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <gtest/gtest.h>

#include "actors/detector/detector_actor.hpp"
#include "actors/device/edge_link.hpp"
#include "actors/device/shard_links.hpp"
#include "actors/gateway/edge_gateway.hpp"
#include "actors/planner/planner_actor.hpp"
#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "schema/job_proof.hpp"
#include "schema/shard_codec.hpp"
#include "schema/shard_fleet_codec.hpp"

using namespace cleave;

TEST(shard_fleet, welcome_names_the_shards_edges) {
  edge_welcome_msg w{3, 0.1, "", {"127.0.0.1:4201", "10.0.0.2:4202"}, std::string(64, 'a')};
  auto bytes = encode(w);
  ASSERT_LE(bytes.size(), edge_payload_cap(edge_welcome, 0));
  auto back = decode_welcome(bytes.data(), bytes.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->shard_edges, w.shard_edges);
  EXPECT_EQ(back->proof, w.proof);
  // Without shards the welcome is the v1 welcome, byte for byte.
  auto plain = encode(edge_welcome_msg{3, 0.1, "cert", {}, {}});
  EXPECT_EQ(plain.size(), 4u + 8 + 2 + 4);
  // Every truncation is refused.
  for (size_t n = plain.size() + 1; n < bytes.size(); ++n) EXPECT_FALSE(decode_welcome(bytes.data(), n)) << n;
  // A count that lies, and one over the cap.
  auto lying = bytes;
  const size_t count_at = plain.size() - 4;  // after the (empty) certificate
  uint16_t many = 60000;
  std::memcpy(lying.data() + count_at, &many, 2);
  EXPECT_FALSE(decode_welcome(lying.data(), lying.size()));
  // The most a welcome can carry fits its cap.
  edge_welcome_msg full{1, 0.1, std::string(max_certificate_bytes, 'c'),
                        std::vector<std::string>(max_shard_edges, std::string(max_edge_address_bytes, 'h')),
                        std::string(max_proof_bytes, 'p')};
  EXPECT_EQ(encode(full).size(), edge_payload_cap(edge_welcome, 0));
}

TEST(shard_fleet, job_proof) {
  auto secret = make_job_secret();
  ASSERT_TRUE(secret);
  ASSERT_EQ(secret->size(), job_secret_bytes);
  const auto proof = prove_device(*secret, 12);
  EXPECT_EQ(proof.size(), 64u);
  auto id = check_job_token(*secret, job_token(12, proof));
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, 12);
  EXPECT_FALSE(check_job_token(*secret, job_token(13, proof))) << "a proof names one id";
  auto other = make_job_secret();
  ASSERT_TRUE(other);
  EXPECT_FALSE(check_job_token(*other, job_token(12, proof))) << "another job's proof";
  EXPECT_FALSE(check_job_token("", job_token(12, proof))) << "a shard with no job admits nobody";
  for (const char* bad : {"", "job:", "job::abc", "job:x:abc", "job:99999999999:abc", "token", "job:12"})
    EXPECT_FALSE(check_job_token(*secret, bad)) << bad;
}

// A coordinator's job secret kept in its --checkpoint-dir: a restart with
// --resume reads it back (its proofs hold), one without draws a new one;
// the file is its owner's only, and a file that is not a secret is refused.
TEST(shard_fleet, job_secret_kept_for_resume) {
  char tmpl[] = "/tmp/cleave-secret-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, path = dir + "/job-secret";
  auto first = kept_job_secret(dir, false);
  ASSERT_TRUE(first) << describe(first.error());
  ASSERT_EQ(first->size(), job_secret_bytes);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = kept_job_secret(dir, true);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);
  EXPECT_TRUE(check_job_token(*again, job_token(3, prove_device(*first, 3)))) << "a proof from before the restart";
  auto fresh = kept_job_secret(dir, false);
  ASSERT_TRUE(fresh);
  EXPECT_NE(*fresh, *first);
  EXPECT_EQ(*kept_job_secret(dir, true), *fresh);
  for (const std::string bad : {std::string(""), std::string(64, 'g'), std::string(63, 'a'), std::string(65, 'a'),
                                std::string(64, 'A'), std::string(1 << 20, 'a')}) {
    { std::ofstream(path, std::ios::trunc) << bad; }
    auto refused = kept_job_secret(dir, true);
    ASSERT_FALSE(refused) << bad.size();
    EXPECT_NE(describe(refused.error()).find("does not hold a job's secret"), std::string::npos);
  }
  { std::ofstream(path, std::ios::trunc) << std::string(64, 'a') << "\n"; }
  EXPECT_EQ(*kept_job_secret(dir, true), std::string(job_secret_bytes, '\xaa'));
  std::filesystem::remove_all(dir);
}

TEST(shard_fleet, fleet_request) {
  shard_fleet_msg m;
  m.shard = 1;
  m.shards = 2;
  m.min_devices = 4;
  m.ps_flops = 1e9;
  m.ps_egress = 2e8;
  m.secret = std::string(32, 's');
  auto bytes = encode(m);
  ASSERT_LE(bytes.size(), small_shard_frame_bytes);
  auto back = decode_shard_fleet(bytes.data(), bytes.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->shard, 1u);
  EXPECT_EQ(back->shards, 2u);
  EXPECT_EQ(back->min_devices, 4);
  EXPECT_EQ(back->secret, m.secret);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_shard_fleet(bytes.data(), n));
  auto wrong = m;
  wrong.shard = 2;
  auto w = encode(wrong);
  EXPECT_FALSE(decode_shard_fleet(w.data(), w.size())) << "shard 2 of 2";
  wrong = m;
  wrong.ps_flops = -1;
  w = encode(wrong);
  EXPECT_FALSE(decode_shard_fleet(w.data(), w.size()));
  wrong = m;
  wrong.secret = "short";
  w = encode(wrong);
  EXPECT_FALSE(decode_shard_fleet(w.data(), w.size()));
  auto edge = encode_shard_edge("127.0.0.1:4301");
  auto at = decode_shard_edge(edge.data(), edge.size());
  ASSERT_TRUE(at);
  EXPECT_EQ(*at, "127.0.0.1:4301");
  EXPECT_FALSE(decode_shard_edge(edge.data(), edge.size() - 1));
}

TEST(shard_fleet, stats_carry_the_device_side) {
  shard_stats s{1, 2, 3};
  auto plain = encode(s);
  EXPECT_EQ(plain.size(), 24u);
  s.devices = true;
  s.tiles = 7;
  s.bytes_down = 8;
  s.bytes_up = 9;
  s.wait_seconds = 0.5;
  auto bytes = encode(s);
  auto back = decode_shard_stats(bytes.data(), bytes.size());
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->devices);
  EXPECT_EQ(back->tiles, 7u);
  EXPECT_EQ(back->bytes_down, 8u);
  EXPECT_EQ(back->bytes_up, 9u);
  EXPECT_DOUBLE_EQ(back->wait_seconds, 0.5);
  EXPECT_FALSE(decode_shard_stats(bytes.data(), bytes.size() - 1));
}

namespace {

device_profile test_profile() {
  device_profile p;
  p.name = "t";
  p.flops = 1e12;
  p.memory_bytes = uint64_t{1} << 30;
  p.downlink = p.uplink = 1e9;
  p.latency = 1e-4;
  return p;
}

struct fleet_test_config : caf::actor_system_config {
  fleet_test_config() {
    add_cleave_message_types(*this);
    add_planner_message_types(*this);
    add_gateway_message_types(*this);
    transport::add_transport_message_types(*this);
    load<caf::io::middleman>();
  }
};

// A join through a link to `port` with `token`: the welcome's device id, or the refusal.
caf::expected<int32_t> join_with(caf::actor_system& sys, uint16_t port, const std::string& token) {
  edge_link_options lo;
  lo.host = "127.0.0.1";
  lo.port = port;
  lo.token = token;
  auto link = connect_edge(sys, lo);
  if (!link) return link.error();
  caf::scoped_actor self{sys};
  caf::expected<int32_t> out = fail("no answer");
  self->request(*link, std::chrono::seconds(10), join_atom::value,
                join_request{message_schema_version, test_profile(), -1, {}})
    .receive([&](welcome_atom, int32_t id, caf::actor) { out = id; }, [&](caf::error& err) { out = err; });
  self->send_exit(*link, caf::exit_reason::user_shutdown);
  return out;
}

}  // namespace

TEST(shard_fleet, a_shard_edge_admits_only_the_jobs_devices) {
  fleet_test_config cfg;
  caf::actor_system sys{cfg};
  auto detector = sys.spawn(detector_actor, detector_options{});
  auto planner = sys.spawn(planner_actor, planner_options{}, detector);
  auto secret = make_job_secret();
  ASSERT_TRUE(secret);
  edge_options eo;
  eo.planner = [planner] { return planner; };
  eo.admit_join = [key = *secret](const edge_join_msg& join) -> caf::error {
    auto id = check_job_token(key, join.token);
    return id ? caf::error{} : id.error();
  };
  auto gateway = sys.spawn(edge_gateway, eo);
  transport::bulk_options bo;
  bo.bind_address = "127.0.0.1";
  auto listener = transport::spawn_bulk_listener(sys, 0, gateway, edge_channel_options(eo, bo));
  ASSERT_TRUE(listener);
  auto welcomed = join_with(sys, listener->port, job_token(5, prove_device(*secret, 5)));
  EXPECT_TRUE(welcomed) << describe(welcomed.error());
  auto forged = join_with(sys, listener->port, job_token(5, std::string(64, '0')));
  ASSERT_FALSE(forged);
  EXPECT_NE(describe(forged.error()).find("did not give"), std::string::npos) << describe(forged.error());
  auto none = join_with(sys, listener->port, "");
  ASSERT_FALSE(none);
  EXPECT_NE(describe(none.error()).find("no proof"), std::string::npos) << describe(none.error());
  // A device whose welcome names an edge nobody listens at serves the others.
  uint16_t closed = 0;
  {
    auto probe = transport::spawn_bulk_listener(sys, 0, gateway, edge_channel_options(eo, bo));
    ASSERT_TRUE(probe);
    closed = probe->port;
    caf::anon_send_exit(probe->channel, caf::exit_reason::user_shutdown);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  device_options dopt;
  dopt.profile = test_profile();
  dopt.paced = false;
  shard_links links(sys, dopt, {}, std::chrono::milliseconds(50));
  links.open({"127.0.0.1:" + std::to_string(closed), "not-an-address",
              "127.0.0.1:" + std::to_string(listener->port)}, 5, prove_device(*secret, 5));
  EXPECT_EQ(links.size(), 2u) << "two edges are host:port";
  EXPECT_EQ(links.connected(), 1u) << "the reachable shard is served";
  // A shard that starts listening there later (one started in place of a
  // lost shard) is dialled again.
  auto late = transport::spawn_bulk_listener(sys, closed, gateway, edge_channel_options(eo, bo));
  ASSERT_TRUE(late) << "port " << closed << " was taken meanwhile";
  for (int i = 0; i < 100 && links.connected() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    links.tend();
  }
  EXPECT_EQ(links.connected(), 2u) << "the late shard's edge was dialled again";
  links.close();
  caf::anon_send_exit(late->channel, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(listener->channel, caf::exit_reason::user_shutdown);
  for (auto& a : {gateway, planner, caf::actor_cast<caf::actor>(detector)})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}
