// The console's other views, all pure: the Prometheus text of /metrics, the
// terminal table of --role=status, and the status client's reading of an
// answer; and that client against a closed port.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "actors/console/http_get.hpp"
#include "actors/console/metrics_view.hpp"
#include "actors/console/status_table.hpp"
#include "actors/console/console_view.hpp"
#include "schema/errors.hpp"

using namespace cleave;
using nlohmann::json;

namespace {

json small_document() {
  return json::parse(R"({
    "training": {"step": 12, "loss": 0.5, "seconds": 3.0, "model": "mlp", "tiles": 40,
                 "tiles_verified": 39, "tiles_rejected": 1, "bytes_down": 1000,
                 "per_device": [{"id": 3, "profile": "fast", "tiles": 40, "busy_seconds": 1.5,
                                 "bytes_down": 2500000, "refused": 1}]},
    "fleet": {"version": 7, "devices": [{"id": 3, "profile": "fast", "state": "quarantined", "phi": 0.25}]}
  })");
}

TEST(metrics_view, renders_a_small_document_exactly) {
  EXPECT_EQ(render_metrics(small_document()),
            R"(# HELP cleave_training_step The training step the loop last reported.
# TYPE cleave_training_step gauge
cleave_training_step 12
# HELP cleave_training_loss The training loss at that step.
# TYPE cleave_training_loss gauge
cleave_training_loss 0.5
# HELP cleave_training_seconds Seconds since the training loop started.
# TYPE cleave_training_seconds gauge
cleave_training_seconds 3.0
# HELP cleave_tiles_total Tiles devices completed.
# TYPE cleave_tiles_total counter
cleave_tiles_total 40
# HELP cleave_tiles_verified_total Device results that passed Freivalds' check.
# TYPE cleave_tiles_verified_total counter
cleave_tiles_verified_total 39
# HELP cleave_tiles_rejected_total Device results refused (malformed, not finite, failed the check or outvoted) and computed again.
# TYPE cleave_tiles_rejected_total counter
cleave_tiles_rejected_total 1
# HELP cleave_downlink_bytes_total Bytes sent to devices (operands).
# TYPE cleave_downlink_bytes_total counter
cleave_downlink_bytes_total 1000
# HELP cleave_device_tiles_total Tiles the device completed.
# TYPE cleave_device_tiles_total counter
cleave_device_tiles_total{device="3",profile="fast"} 40
# HELP cleave_device_downlink_bytes_total Bytes sent to the device.
# TYPE cleave_device_downlink_bytes_total counter
cleave_device_downlink_bytes_total{device="3",profile="fast"} 2500000
# HELP cleave_device_busy_seconds_total Seconds the device spent on tiles.
# TYPE cleave_device_busy_seconds_total counter
cleave_device_busy_seconds_total{device="3",profile="fast"} 1.5
# HELP cleave_device_refused_total Results of the device that were refused.
# TYPE cleave_device_refused_total counter
cleave_device_refused_total{device="3",profile="fast"} 1
# HELP cleave_fleet_version The planner's registry version.
# TYPE cleave_fleet_version gauge
cleave_fleet_version 7
# HELP cleave_planner_answered 1 if the planner answered the console, else 0.
# TYPE cleave_planner_answered gauge
cleave_planner_answered 1
# HELP cleave_fleet_devices Devices in the fleet by state.
# TYPE cleave_fleet_devices gauge
cleave_fleet_devices{state="alive"} 0
cleave_fleet_devices{state="dead"} 0
cleave_fleet_devices{state="draining"} 0
cleave_fleet_devices{state="quarantined"} 1
cleave_fleet_devices{state="suspected"} 0
# HELP cleave_device_phi The failure detector's suspicion level of the device (phi accrual).
# TYPE cleave_device_phi gauge
cleave_device_phi{device="3"} 0.25
# HELP cleave_device_state 1 for the device's state, 0 for the others.
# TYPE cleave_device_state gauge
cleave_device_state{device="3",state="alive"} 0
cleave_device_state{device="3",state="suspected"} 0
cleave_device_state{device="3",state="dead"} 0
cleave_device_state{device="3",state="quarantined"} 1
cleave_device_state{device="3",state="draining"} 0
)");
}

TEST(metrics_view, shows_the_shards_the_plans_and_a_pause) {
  const auto text = render_metrics(json::parse(R"({
    "training": {"step": 9, "shards": [{"shard": 0, "step": 9, "bytes_down": 10, "bytes_up": 4,
                                        "tiles": 2, "memory_bytes": 4096},
                                       {"shard": 1, "step": 9, "bytes_down": 12, "bytes_up": 5,
                                        "tiles": 3, "memory_bytes": 2048}]},
    "controls": {"paused": true},
    "plans": [{"m": 64, "n": 512, "k": 784, "role": "forward", "devices": [0, 2],
               "predicted_seconds": 0.25},
              {"m": 64, "n": 10, "k": 256, "role": "grad_input", "devices": [], "predicted_seconds": 0.5}]
  })"));
  for (const char* line : {"\ncleave_ps_shard_step{shard=\"1\"} 9\n",
                           "\ncleave_ps_shard_downlink_bytes_total{shard=\"0\"} 10\n",
                           "\ncleave_ps_shard_uplink_bytes_total{shard=\"1\"} 5\n",
                           "\ncleave_ps_shard_tiles_total{shard=\"1\"} 3\n",
                           "\ncleave_ps_shard_memory_bytes{shard=\"0\"} 4096\n",
                           "\ncleave_training_paused 1\n",
                           "\ncleave_plan_predicted_seconds{shape=\"64x512x784\",role=\"forward\"} 0.25\n",
                           "\ncleave_plan_devices{shape=\"64x512x784\",role=\"forward\"} 2\n",
                           "\ncleave_plan_devices{shape=\"64x10x256\",role=\"grad_input\"} 0\n",
                           "# TYPE cleave_ps_shard_memory_bytes gauge\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
}

TEST(metrics_view, shows_each_relay) {
  const auto text = render_metrics(json::parse(R"({
    "fleet": {"version": 1, "devices": [], "relays": [
      {"name": "city", "state": "serving", "store_bytes": 1024, "devices": [4, 5], "bytes_down": 150,
       "bytes_up": 50, "operands": 20, "operands_named": 14, "misses": 1, "hit_rate": 0.65}]}
  })"));
  for (const char* line : {"\ncleave_relay_devices{relay=\"city\"} 2\n",
                           "\ncleave_relay_downlink_bytes_total{relay=\"city\"} 150\n",
                           "\ncleave_relay_uplink_bytes_total{relay=\"city\"} 50\n",
                           "\ncleave_relay_store_bytes{relay=\"city\"} 1024\n",
                           "\ncleave_relay_hit_ratio{relay=\"city\"} 0.65\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
}

TEST(metrics_view, escapes_label_values) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  json doc = {{"training", nullptr},
              {"fleet", {{"devices", {{{"id", 1}, {"state", "odd \"one\"\\\n"}}}}}}};
  const auto text = render_metrics(doc);
  EXPECT_NE(text.find("cleave_device_state{device=\"1\",state=\"odd \\\"one\\\"\\\\\\n\"} 1\n"),
            std::string::npos)
    << text;
  EXPECT_NE(text.find("cleave_fleet_devices{state=\"odd \\\"one\\\"\\\\\\n\"} 1\n"), std::string::npos);
}

TEST(metrics_view, leaves_out_what_the_document_lacks) {
  EXPECT_EQ(render_metrics(json()), "");
  EXPECT_EQ(render_metrics(json::object()), "");
  EXPECT_EQ(render_metrics({{"training", nullptr}, {"fleet", nullptr}}), "");
  // A NaN loss arrives as null: no sample rather than a made-up one.
  const auto text = render_metrics({{"training", {{"step", 1}, {"loss", nullptr}}}});
  EXPECT_EQ(text.find("cleave_training_loss"), std::string::npos);
  EXPECT_NE(text.find("cleave_training_step 1\n"), std::string::npos);
  // A planner that did not answer is a 0, and the families it would fill are gone.
  const auto lost = render_metrics({{"fleet", {{"planner_error", "timeout"}}}});
  EXPECT_EQ(lost, "# HELP cleave_planner_answered 1 if the planner answered the console, else 0.\n"
                  "# TYPE cleave_planner_answered gauge\ncleave_planner_answered 0\n");
}

TEST(status_table, shows_the_run_and_a_row_per_device) {
  auto doc = small_document();
  doc["fleet"]["devices"].push_back({{"id", 10}, {"profile", "phone"}, {"state", "alive"}, {"phi", 1.0}});
  EXPECT_EQ(render_status_page(doc),
            "step 12  loss 0.5000  model mlp  devices 1/0/0/1/0 alive/suspected/dead/quarantined/draining"
            "  tiles 40  verified 39  rejected 1\n"
            "id  profile  state        tiles  MB down  MB up  busy %  refused   phi\n"
            " 3  fast     quarantined     40      2.5      -    50.0        1  0.25\n"
            "10  phone    alive            -        -      -       -        -  1.00\n");
}

TEST(status_table, copes_with_a_fleet_before_training) {
  const json doc = {{"training", nullptr}, {"fleet", {{"devices", json::array()}}}};
  EXPECT_EQ(render_status_page(doc),
            "training not started  devices 0/0/0/0/0 alive/suspected/dead/quarantined/draining\n"
            "id  profile  state  tiles  MB down  MB up  busy %  refused  phi\n");
  EXPECT_EQ(render_status_header(json()), "training not started  devices 0/0/0/0/0 alive/suspected/dead/quarantined/draining");
}

TEST(http_get, reads_an_answer_and_its_length) {
  auto a = parse_http_answer("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX: y\r\n\r\nabc");
  ASSERT_TRUE(a) << describe(a.error());
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->reason, "OK");
  EXPECT_EQ(a->body, "abc");
  auto nf = parse_http_answer("HTTP/1.1 404 Not Found\r\n\r\ntry GET /\n");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(nf->body, "try GET /\n");
  EXPECT_FALSE(parse_http_answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));  // cut short
  EXPECT_FALSE(parse_http_answer("SSH-2.0-OpenSSH\r\n\r\n"));
  EXPECT_FALSE(parse_http_answer("HTTP/1.1 200 OK\r\n"));  // no end of head
  EXPECT_FALSE(parse_http_answer("HTTP/1.1 2x0 OK\r\n\r\n"));
}

TEST(http_get, says_why_it_got_nothing) {
  // A port just released by this process: nothing listens there.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const uint16_t port = ntohs(a.sin_port);
  ::close(fd);
  auto got = http_get("127.0.0.1", port, "/api/state");
  ASSERT_FALSE(got);
  EXPECT_NE(describe(got.error()).find("cannot connect to 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
    << describe(got.error());
}

}  // namespace

TEST(metrics_view, renders_the_heartbeat_wait_as_a_histogram) {
  delay_histogram h;
  h.record(5e-6);
  h.record(3e-4);
  h.record(30);
  const auto doc = render_heartbeat_delay(h);
  EXPECT_EQ(doc["count"], 3);
  EXPECT_DOUBLE_EQ(doc["p50_seconds"].get<double>(), 5e-4);
  EXPECT_TRUE(doc["p99_seconds"].is_null());  // past the last bound: JSON has no +Inf
  const auto text = render_metrics({{"heartbeat_delay", doc}});
  EXPECT_NE(text.find("# TYPE cleave_heartbeat_delay_seconds histogram\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cleave_heartbeat_delay_seconds_bucket{le=\"1e-05\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cleave_heartbeat_delay_seconds_bucket{le=\"0.0005\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cleave_heartbeat_delay_seconds_bucket{le=\"10.0\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cleave_heartbeat_delay_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cleave_heartbeat_delay_seconds_count 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cleave_heartbeat_delay_seconds_sum 30.000305"), std::string::npos) << text;
}
