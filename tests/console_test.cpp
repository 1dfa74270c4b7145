// The admin console: its HTTP head parser and view (pure), and its endpoint
// on a real loopback port, against well-behaved and hostile clients.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/console/console_actor.hpp"
#include "actors/console/console_page.hpp"
#include "actors/console/console_view.hpp"
#include "actors/console/controls.hpp"
#include "actors/console/event_log.hpp"
#include "actors/console/http_endpoint.hpp"
#include "actors/console/http_head.hpp"
#include "schema/errors.hpp"
#include "tests/raw_client.hpp"
#include "tests/test_util.hpp"

using namespace cleave;
using cleave::testing::raw_client;

namespace {

TEST(http_head, parses_a_get_and_waits_for_the_rest) {
  auto h = parse_http_head("GET /status?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(h);
  ASSERT_TRUE(h->has_value());
  EXPECT_EQ((*h)->method, "GET");
  EXPECT_EQ((*h)->path, "/status");
  EXPECT_EQ((*h)->query, "x=1");
  auto partial = parse_http_head("GET / HTTP/1.1\r\nHost:");
  ASSERT_TRUE(partial);
  EXPECT_FALSE(partial->has_value());
}

TEST(http_head, refuses_what_is_not_a_small_http_request) {
  for (const char* bad : {"GARBAGE\r\n\r\n", "GET / HTTP/2\r\n\r\n", "get / HTTP/1.1\r\n\r\n",
                          "GET http://x/ HTTP/1.1\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n",
                          "GET / HTTP/1.1 extra\r\n\r\n"})
    EXPECT_FALSE(parse_http_head(bad)) << bad;
  EXPECT_FALSE(parse_http_head(std::string(max_http_head_bytes, 'A')));  // no end in sight
  EXPECT_FALSE(parse_http_head("GET / HTTP/1.1\r\nX: " + std::string(max_http_head_bytes, 'a') + "\r\n\r\n"));
}

TEST(http_head, a_response_says_its_length_and_closes) {
  const auto r = http_response(404, "text/plain", "nope\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
  EXPECT_NE(r.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(r.substr(r.size() - 5), "nope\n");
}

TEST(http_head, reads_the_fields_a_control_needs) {
  const std::string request = "POST /api/control/pause HTTP/1.1\r\nauthorization:  Bearer abc \r\n"
                              "Content-Length: 12\r\n\r\nbody";
  auto h = parse_http_head(request);
  ASSERT_TRUE(h && h->has_value());
  EXPECT_EQ((*h)->authorization, "Bearer abc");
  EXPECT_EQ((*h)->content_length, 12u);
  EXPECT_EQ((*h)->size, request.size() - 4);  // the body starts there
  EXPECT_FALSE((*h)->chunked);
  EXPECT_FALSE(parse_http_head("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"));
  EXPECT_FALSE(parse_http_head("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"));
  auto chunked = parse_http_head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_TRUE(chunked && chunked->has_value());
  EXPECT_TRUE((*chunked)->chunked);
}

TEST(controls, a_post_path_names_one_control) {
  EXPECT_EQ(control_of_path("/api/control/pause")->kind, control_kind::pause);
  EXPECT_EQ(control_of_path("/api/control/resume")->kind, control_kind::resume);
  EXPECT_EQ(control_of_path("/api/control/checkpoint")->kind, control_kind::checkpoint);
  auto drain = control_of_path("/api/control/drain/12");
  ASSERT_TRUE(drain);
  EXPECT_EQ(drain->kind, control_kind::drain);
  EXPECT_EQ(drain->device, 12);
  for (const char* bad : {"/", "/api/control/", "/api/control/drain/", "/api/control/drain/-1",
                          "/api/control/drain/1x", "/api/control/drain/99999999999",
                          "/api/control/pause/", "/api/state"})
    EXPECT_FALSE(control_of_path(bad)) << bad;
}

TEST(controls, only_the_right_bearer_token_passes) {
  EXPECT_EQ(refuse_unauthorized("", "Bearer x")->status, 403);  // controls off
  EXPECT_EQ(refuse_unauthorized("s3cret", "")->status, 401);
  EXPECT_EQ(refuse_unauthorized("s3cret", "s3cret")->status, 401);  // no scheme
  EXPECT_EQ(refuse_unauthorized("s3cret", "Bearer s3cre")->status, 401);
  EXPECT_EQ(refuse_unauthorized("s3cret", "Bearer s3cret2")->status, 401);
  EXPECT_EQ(refuse_unauthorized("s3cret", "Bearer S3cret")->status, 401);
  EXPECT_FALSE(refuse_unauthorized("s3cret", "Bearer s3cret"));
  EXPECT_TRUE(same_secret("abc", "abc"));
  EXPECT_FALSE(same_secret("", "abc"));
  EXPECT_FALSE(same_secret("abcd", "abc"));
}

TEST(controls, the_loop_must_be_there_and_able) {
  const control_request pause{control_kind::pause}, resume{control_kind::resume},
    checkpoint{control_kind::checkpoint}, drain{control_kind::drain, 3};
  loop_state none;
  EXPECT_EQ(refuse_for_loop(pause, none)->status, 409);
  EXPECT_FALSE(refuse_for_loop(drain, none));  // the planner's to judge
  loop_state running{true, false, false};
  EXPECT_FALSE(refuse_for_loop(pause, running));
  EXPECT_EQ(refuse_for_loop(resume, running)->status, 409);
  const auto no_dir = refuse_for_loop(checkpoint, running);
  ASSERT_TRUE(no_dir);
  EXPECT_EQ(no_dir->status, 409);
  EXPECT_NE(no_dir->text.find("--checkpoint-dir"), std::string::npos);
  loop_state paused{true, true, true};
  EXPECT_EQ(refuse_for_loop(pause, paused)->status, 409);
  EXPECT_FALSE(refuse_for_loop(resume, paused));
  EXPECT_FALSE(refuse_for_loop(checkpoint, paused));
}

TEST(controls, the_token_comes_from_the_flag_or_a_file) {
  EXPECT_EQ(*read_admin_token("s3cret"), "s3cret");
  const cleave::testing::scratch_dir dir;  // its own: ctest runs tests side by side
  const std::string path = dir.file("admin_token");
  std::ofstream(path) << "from-a-file\n";
  EXPECT_EQ(*read_admin_token("@" + path), "from-a-file");
  std::ofstream(path) << "\n";
  EXPECT_FALSE(read_admin_token("@" + path));
  std::remove(path.c_str());
  EXPECT_FALSE(read_admin_token("@" + path));
  EXPECT_FALSE(read_admin_token("two words"));
  EXPECT_FALSE(read_admin_token(std::string(300, 'a')));
}

planner_view two_devices() {
  planner_view pv;
  pv.version = 7;
  pv.quorum = true;
  pv.members = {fleet_member{0, {}, device_profile{"phone", 2e10, 2000000000, 5e7, 1e7, 0.02}, {}},
                fleet_member{3, {}, device_profile{"vm", 6e10, 4000000000, 1.25e8, 1.25e8, 0.001}, {}}};
  pv.suspected = {3};
  return pv;
}

TEST(console_view, merges_the_registry_with_the_detector) {
  const auto doc = render_console({{"step", 12}}, two_devices(),
                                  {{0, 0.5, false, false}, {3, 4.0, true, false}, {9, 0, false, true}});
  EXPECT_EQ(doc["training"]["step"], 12);
  const auto& fleet = doc["fleet"];
  EXPECT_EQ(fleet["version"], 7);
  EXPECT_EQ(fleet["alive"], 1);
  EXPECT_EQ(fleet["suspected"], 1);
  const auto& d = fleet["devices"];
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0]["profile"], "phone");
  EXPECT_EQ(d[0]["state"], "alive");
  EXPECT_DOUBLE_EQ(d[0]["phi"].get<double>(), 0.5);
  EXPECT_EQ(d[1]["state"], "suspected");
  EXPECT_EQ(d[2]["id"], 9);  // gone from the registry, still remembered as dead
  EXPECT_EQ(d[2]["state"], "dead");
  planner_view lost;
  lost.error = "timeout";
  EXPECT_EQ(render_console(nullptr, lost, {})["fleet"]["planner_error"], "timeout");
}

TEST(console_view, shows_each_relay_with_its_devices_and_their_traffic) {
  auto pv = two_devices();
  pv.members.push_back(fleet_member{4, {}, *preset_profile("phone"), relay_seat{"city", 1 << 20, 1e9, 1e9, 1e10, 0.005}});
  pv.members.push_back(fleet_member{5, {}, *preset_profile("phone"), relay_seat{"city", 1 << 20, 1e9, 1e9, 1e10, 0.005}});
  pv.members.push_back(fleet_member{6, {}, *preset_profile("phone"), relay_seat{"town", 2 << 20, 1e9, 1e9, 1e10, 0.005}});
  pv.suspected.push_back(6);
  const auto training = nlohmann::json::parse(R"({"per_device": [
    {"id": 0, "bytes_down": 1000, "bytes_up": 10, "operands": 8, "operands_named": 0, "misses": 0},
    {"id": 4, "bytes_down": 100, "bytes_up": 20, "operands": 10, "operands_named": 6, "misses": 1},
    {"id": 5, "bytes_down": 50, "bytes_up": 30, "operands": 10, "operands_named": 8, "misses": 0}]})");
  const auto doc = render_console(training, pv, {});
  const auto& relays = doc["fleet"]["relays"];
  ASSERT_EQ(relays.size(), 2u);
  EXPECT_EQ(relays[0]["name"], "city");
  EXPECT_EQ(relays[0]["state"], "serving");
  EXPECT_EQ(relays[0]["devices"], nlohmann::json::parse("[4, 5]"));
  EXPECT_EQ(relays[0]["bytes_down"], 150);
  EXPECT_EQ(relays[0]["bytes_up"], 50);
  EXPECT_DOUBLE_EQ(relays[0]["hit_rate"].get<double>(), 13.0 / 20.0);  // named, less the miss
  EXPECT_EQ(relays[1]["name"], "town");
  EXPECT_EQ(relays[1]["state"], "suspected");
  EXPECT_EQ(relays[1]["store_bytes"], 2 << 20);
  EXPECT_EQ(doc["fleet"]["devices"][2]["relay"], "city");
  EXPECT_FALSE(doc["fleet"]["devices"][0].contains("relay"));
  EXPECT_FALSE(render_console(training, two_devices(), {})["fleet"].contains("relays"));
}

// A plan of one tile on device 1.
plan one_tile_plan() {
  plan p;
  p.local = false;
  p.problem = gemm_problem{64, 512, 784, gemm_role::forward, 1};
  p.grid_m = 1;
  p.grid_n = 2;
  p.tiles = {assignment{tile{0, 64, 0, 256, 0, 784}, 1, 0.002, false, false}};
  p.predicted_seconds = 0.002;
  p.devices_used = 1;
  return p;
}

TEST(console_view, shows_draining_devices_the_plans_and_the_controls) {
  auto pv = two_devices();
  pv.draining = {0, 1};  // 1 is also suspected: that shows
  pv.plans = {one_tile_plan()};
  control_view controls;
  controls.enabled = true;
  controls.loop = loop_state{true, true, true};
  const auto doc = render_console(nullptr, pv, {}, event_log(1), controls);
  EXPECT_EQ(doc["fleet"]["devices"][0]["state"], "draining");
  EXPECT_EQ(doc["fleet"]["devices"][1]["state"], "suspected");
  EXPECT_EQ(doc["fleet"]["draining"], 2);
  ASSERT_EQ(doc["plans"].size(), 1u);
  const auto& p = doc["plans"][0];
  EXPECT_EQ(p["role"], "forward");
  EXPECT_EQ(p["m"], 64);
  EXPECT_EQ(p["grid"], nlohmann::json::array({1, 2, 1}));
  EXPECT_EQ(p["devices"], nlohmann::json::array({1}));
  EXPECT_EQ(p["tiles"], 1);
  EXPECT_DOUBLE_EQ(p["predicted_seconds"].get<double>(), 0.002);
  EXPECT_EQ(doc["controls"]["enabled"], true);
  EXPECT_EQ(doc["controls"]["paused"], true);
  EXPECT_EQ(doc["controls"]["checkpoint_pending"], false);
}

TEST(event_log, keeps_the_last_events_oldest_first) {
  event_log log(3);
  EXPECT_EQ(log.size(), 0u);
  EXPECT_TRUE(log.events().empty());
  for (int i = 0; i < 5; ++i) log.push({double(i), "dead", i, 0});
  const auto kept = log.events();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].device, 2);
  EXPECT_EQ(kept[2].device, 4);
  EXPECT_EQ(log.dropped(), 2u);
  event_log tiny(0);  // a zero capacity still keeps the latest
  tiny.push({1, "join", 7, 0});
  ASSERT_EQ(tiny.events().size(), 1u);
  EXPECT_EQ(tiny.events()[0].device, 7);
}

TEST(console_view, lists_the_events_oldest_first) {
  event_log log(2);
  log.push({0.5, "join", 1, 0});
  log.push({1.25, "suspect", 1, 3.5});
  log.push({2.0, "checkpoint", -1, 0});
  const auto doc = render_console(nullptr, two_devices(), {}, log);
  const auto& ev = doc["events"];
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0], nlohmann::json({{"time", 1.25}, {"kind", "suspect"}, {"device", 1}, {"phi", 3.5}}));
  EXPECT_EQ(ev[1], nlohmann::json({{"time", 2.0}, {"kind", "checkpoint"}}));
  EXPECT_EQ(doc["events_dropped"], 1);
  EXPECT_TRUE(render_console(nullptr, two_devices(), {})["events"].empty());
}

TEST(console_page, is_one_self_contained_document) {
  const std::string page(console_page());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("\"/api/state?\""), std::string::npos);  // one page of the table at a time
  EXPECT_NE(page.find("<canvas"), std::string::npos);
  EXPECT_EQ(page.find("/*@"), std::string::npos) << "a build marker left in the page";
  // Nothing leaves the console: no address, no external script or style.
  for (const char* outside : {"http://", "https://", "<script src", "<link", "@import", "//cdn"})
    EXPECT_EQ(page.find(outside), std::string::npos) << outside;
  EXPECT_EQ(page.find("innerHTML"), std::string::npos) << "data reaches the DOM as text only";
}

// A console over stand-in planner and detector actors, behind a real port.
struct console_node {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor planner, detector;
  console_handle console;
  uint16_t port = 0;
  explicit console_node(console_endpoint_options opts) {
    cfg.load<caf::io::middleman>();
    add_planner_message_types(cfg);
    add_detector_message_types(cfg);
    cfg.set("logger.console-verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
    planner = sys->spawn([](caf::event_based_actor* self) -> caf::behavior {
      return {[](caf::get_atom) {
                auto pv = two_devices();
                return caf::make_message(pv.version, pv.quorum, pv.members, pv.suspected,
                                         std::vector<int32_t>{});
              },
              [](plans_atom) { return std::vector<plan>{one_tile_plan()}; },
              [](drain_atom, int32_t id) -> caf::result<uint64_t> {
                if (id != 1) return fail("device " + std::to_string(id) + " is not in the fleet");
                return uint64_t{8};
              },
              [=](subscribe_atom, caf::actor sub) {
                self->send(sub, event_atom::value, fleet_event{fleet_event_kind::dead, 3, 9.5});
              }};
    });
    detector = sys->spawn([]() -> caf::behavior {
      return {[](caf::get_atom) { return std::vector<device_health>{{0, 0.25, false, false}}; }};
    });
    console = sys->spawn(console_actor, [p = planner] { return p; }, [d = detector] { return d; },
                         !opts.admin_token.empty());
    caf::anon_send(console, console_status_atom::value, std::string(R"({"step": 5, "loss": 2.5})"));
    auto bound = open_console_endpoint(*sys, 0, console, opts);
    if (bound) port = *bound;
  }
  ~console_node() {
    for (auto& a : {planner, detector, caf::actor_cast<caf::actor>(console)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sys.reset();
  }
};

console_endpoint_options quick() {
  console_endpoint_options o;
  o.head_timeout = std::chrono::milliseconds(300);
  o.max_connections = 2;
  return o;
}

TEST(console_endpoint, answers_get_with_the_live_fleet_and_training) {
  console_node n(quick());
  ASSERT_NE(n.port, 0);
  raw_client c(n.port);
  ASSERT_TRUE(c.write_all("GET /api/state HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(c.sees_close());
  ASSERT_EQ(c.received.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << c.received;
  const auto doc = nlohmann::json::parse(c.received.substr(c.received.find("\r\n\r\n") + 4));
  EXPECT_EQ(doc["training"]["step"], 5);
  EXPECT_EQ(doc["fleet"]["devices"].size(), 2u);
  EXPECT_DOUBLE_EQ(doc["fleet"]["devices"][0]["phi"].get<double>(), 0.25);
  // The console subscribed to the planner at its start; the stand-in
  // answered with one event, stamped with the console's clock.
  ASSERT_EQ(doc["events"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["events"][0]["kind"], "dead");
  EXPECT_EQ(doc["events"][0]["device"], 3);
  EXPECT_DOUBLE_EQ(doc["events"][0]["phi"].get<double>(), 9.5);
  EXPECT_GE(doc["events"][0]["time"].get<double>(), 0.0);
}

TEST(console_endpoint, serves_the_document_and_its_metrics_by_path) {
  console_node n(quick());
  ASSERT_NE(n.port, 0);
  auto get = [&](const std::string& path) {
    raw_client c(n.port);
    c.write_all("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(c.sees_close());
    return c.received;
  };
  for (const char* path : {"/api/state", "/status"}) {
    const auto r = get(path);
    ASSERT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << path;
    EXPECT_NE(r.find("Content-Type: application/json\r\n"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(r.substr(r.find("\r\n\r\n") + 4))["training"]["step"], 5);
  }
  // One page of the device table; a hostile query is refused in one line.
  const auto paged = get("/api/state?page=0&per_page=1&sort=phi&dir=desc");
  ASSERT_EQ(paged.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << paged.substr(0, 200);
  const auto pdoc = nlohmann::json::parse(paged.substr(paged.find("\r\n\r\n") + 4));
  EXPECT_EQ(pdoc["fleet"]["devices"].size(), 1u);
  EXPECT_GE(pdoc["fleet"]["page"]["total"].get<int>(), 1);
  const auto refused = get("/api/state?per_page=100000");
  EXPECT_EQ(refused.rfind("HTTP/1.1 400 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("per_page must be a whole number in [1, 500]\n"), std::string::npos) << refused;
  const auto page = get("/");
  ASSERT_EQ(page.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << page.substr(0, 200);
  EXPECT_NE(page.find("Content-Type: text/html; charset=utf-8\r\n"), std::string::npos);
  EXPECT_EQ(page.substr(page.find("\r\n\r\n") + 4), std::string(console_page()));
  for (const char* outside : {"http://", "https://", "<script src"})
    EXPECT_EQ(page.find(outside), std::string::npos) << outside;
  const auto m = get("/metrics");
  ASSERT_EQ(m.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << m;
  EXPECT_NE(m.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(m.find("\ncleave_training_step 5\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\ncleave_fleet_devices{state=\"suspected\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\ncleave_device_phi{device=\"0\"} 0.25\n"), std::string::npos) << m;
}

// A restarted planner is a new actor: the console subscribes to it too.
TEST(console_actor, subscribes_again_when_the_planner_changes) {
  caf::actor_system_config cfg;
  add_planner_message_types(cfg);
  add_detector_message_types(cfg);
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto stand_in = [&](fleet_event ev) {
    return sys.spawn([ev](caf::event_based_actor* self) -> caf::behavior {
      return {[](caf::get_atom) {
                return caf::make_message(uint64_t{1}, true, std::vector<fleet_member>{},
                                         std::vector<int32_t>{}, std::vector<int32_t>{});
              },
              [=](subscribe_atom, caf::actor sub) { self->send(sub, event_atom::value, ev); }};
    });
  };
  auto first = stand_in({fleet_event_kind::join, 1, 0});
  auto second = stand_in({fleet_event_kind::rejoin, 2, 0});
  auto current = std::make_shared<std::pair<std::mutex, caf::actor>>();
  current->second = first;
  auto console = sys.spawn(console_actor, [current] {
    std::lock_guard<std::mutex> guard{current->first};
    return current->second;
  }, [] { return caf::actor{}; }, false);
  caf::scoped_actor self{sys};
  auto kinds = [&] {
    std::vector<std::string> out;
    self->request(console, std::chrono::seconds(5), caf::get_atom::value)
      .receive([&](const std::string& doc) {
                 const auto parsed = nlohmann::json::parse(doc);
                 for (const auto& e : parsed["events"]) out.push_back(e["kind"]);
               },
               [&](caf::error& err) { ADD_FAILURE() << sys.render(err); });
    return out;
  };
  for (int i = 0; i < 100 && kinds().size() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(kinds(), std::vector<std::string>{"join"});
  {
    std::lock_guard<std::mutex> guard{current->first};
    current->second = second;
  }
  for (int i = 0; i < 100 && kinds().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(kinds(), (std::vector<std::string>{"join", "rejoin"}));
  for (auto& a : {first, second, caf::actor_cast<caf::actor>(console)})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

TEST(console_endpoint, refuses_hostile_clients_and_keeps_serving) {
  console_node n(quick());
  ASSERT_NE(n.port, 0);
  auto status_of = [&](const std::string& request) {
    raw_client c(n.port);
    c.write_all(request);
    EXPECT_TRUE(c.sees_close());
    return c.received.substr(0, c.received.find("\r\n"));
  };
  EXPECT_EQ(status_of(std::string(3 * max_http_head_bytes, 'A')), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(status_of("\x16\x03\x01 hello\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_of("DELETE / HTTP/1.1\r\n\r\n"), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(status_of("GET /etc/passwd HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found");
  {
    // A client that stalls mid-head is closed without an answer; while two
    // are open, a third is turned away at once.
    raw_client slow(n.port), slow2(n.port);
    slow.write_all("GET / HT");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    raw_client third(n.port, 2);
    EXPECT_TRUE(third.sees_close());
    EXPECT_TRUE(third.received.empty());
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(slow.sees_close());
    EXPECT_TRUE(slow.received.empty());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    EXPECT_TRUE(slow2.sees_close());
  }
  EXPECT_EQ(status_of("GET /status HTTP/1.0\r\n\r\n"), "HTTP/1.1 200 OK");
}

// A socket is reused once closed: the head timeout of an answered
// connection must not close a later one on the same socket.
TEST(console_endpoint, answers_a_steady_poll_across_many_head_timeouts) {
  console_node n(quick());
  ASSERT_NE(n.port, 0);
  int unanswered = 0;
  const auto until = std::chrono::steady_clock::now() + 4 * quick().head_timeout;
  int requests = 0;
  for (; std::chrono::steady_clock::now() < until; ++requests) {
    raw_client c(n.port);
    c.write_all("GET /api/state HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(c.sees_close());
    if (c.received.rfind("HTTP/1.1 200 OK\r\n", 0) != 0) ++unanswered;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  EXPECT_EQ(unanswered, 0) << "of " << requests;
}

console_endpoint_options with_token(std::string token) {
  auto o = quick();
  o.max_connections = 4;
  o.admin_token = std::move(token);
  return o;
}

// One request's status line and body.
std::pair<std::string, std::string> http_exchange(uint16_t port, const std::string& request) {
  raw_client c(port);
  c.write_all(request);
  EXPECT_TRUE(c.sees_close());
  const auto line_end = c.received.find("\r\n");
  const auto body_at = c.received.find("\r\n\r\n");
  return {c.received.substr(0, line_end),
          body_at == std::string::npos ? "" : c.received.substr(body_at + 4)};
}

std::string post(const std::string& path, const std::string& auth = "") {
  return "POST " + path + " HTTP/1.1\r\nContent-Length: 0\r\n" +
         (auth.empty() ? "" : "Authorization: " + auth + "\r\n") + "\r\n";
}

TEST(console_endpoint, controls_need_a_configured_token) {
  console_node n(quick());
  ASSERT_NE(n.port, 0);
  for (const char* path : {"/api/control/pause", "/api/control/resume", "/api/control/checkpoint",
                           "/api/control/drain/1"})
    EXPECT_EQ(http_exchange(n.port, post(path, "Bearer anything")).first, "HTTP/1.1 403 Forbidden") << path;
}

TEST(console_endpoint, a_control_without_the_right_token_is_401_and_changes_nothing) {
  console_node n(with_token("s3cret"));
  ASSERT_NE(n.port, 0);
  caf::scoped_actor loop{*n.sys};
  caf::anon_send(n.console, control_atom::value, caf::actor_cast<caf::actor>(loop), true);
  for (const char* path : {"/api/control/pause", "/api/control/resume", "/api/control/checkpoint",
                           "/api/control/drain/1"})
    for (const char* auth : {"", "Bearer wrong", "Bearer s3cre", "Basic czNjcmV0"})
      EXPECT_EQ(http_exchange(n.port, post(path, auth)).first, "HTTP/1.1 401 Unauthorized")
        << path << " " << auth;
  bool got_any = false;
  loop->receive([&](pause_atom) { got_any = true; }, [&](resume_atom) { got_any = true; },
                [&](checkpoint_atom) { got_any = true; },
                caf::after(std::chrono::milliseconds(100)) >> [] {});
  EXPECT_FALSE(got_any);
  const auto doc = nlohmann::json::parse(http_exchange(n.port, "GET /api/state HTTP/1.1\r\n\r\n").second);
  EXPECT_EQ(doc["controls"]["paused"], false);
  EXPECT_EQ(doc["fleet"]["devices"][1]["state"], "suspected");
  EXPECT_EQ(doc["events"].size(), 1u) << doc["events"].dump();
}

TEST(console_endpoint, carries_out_an_authorised_control_and_logs_it) {
  console_node n(with_token("s3cret"));
  ASSERT_NE(n.port, 0);
  const std::string auth = "Bearer s3cret";
  // No loop yet: pausing has nothing to pause.
  EXPECT_EQ(http_exchange(n.port, post("/api/control/pause", auth)).first, "HTTP/1.1 409 Conflict");
  caf::scoped_actor loop{*n.sys};
  caf::anon_send(n.console, control_atom::value, caf::actor_cast<caf::actor>(loop), false);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(http_exchange(n.port, post("/api/control/pause", auth)).first, "HTTP/1.1 200 OK");
  bool paused = false;
  loop->receive([&](pause_atom) { paused = true; }, caf::after(std::chrono::seconds(2)) >> [] {});
  EXPECT_TRUE(paused);
  const auto no_dir = http_exchange(n.port, post("/api/control/checkpoint", auth));
  EXPECT_EQ(no_dir.first, "HTTP/1.1 409 Conflict");
  EXPECT_NE(no_dir.second.find("--checkpoint-dir"), std::string::npos) << no_dir.second;
  EXPECT_EQ(http_exchange(n.port, post("/api/control/drain/1", auth)).first, "HTTP/1.1 200 OK");
  EXPECT_EQ(http_exchange(n.port, post("/api/control/drain/9", auth)).first, "HTTP/1.1 404 Not Found");
  EXPECT_EQ(http_exchange(n.port, post("/api/control/nothing", auth)).first,
            "HTTP/1.1 405 Method Not Allowed");
  const auto big = "POST /api/control/pause HTTP/1.1\r\nAuthorization: " + auth +
                   "\r\nContent-Length: " + std::to_string(max_http_body_bytes + 1) + "\r\n\r\n";
  EXPECT_EQ(http_exchange(n.port, big).first, "HTTP/1.1 413 Content Too Large");
  // A body within the cap is read to its end first.
  EXPECT_EQ(http_exchange(n.port, "POST /api/control/resume HTTP/1.1\r\nAuthorization: " + auth +
                               "\r\nContent-Length: 2\r\n\r\n{}").first,
            "HTTP/1.1 200 OK");
  const auto doc = nlohmann::json::parse(http_exchange(n.port, "GET /api/state HTTP/1.1\r\n\r\n").second);
  std::vector<std::string> kinds;
  for (const auto& e : doc["events"]) kinds.push_back(e["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"dead", "pause", "drain", "resume"}));
  EXPECT_EQ(doc["events"][2]["device"], 1);
  EXPECT_EQ(doc["controls"]["enabled"], true);
  EXPECT_EQ(doc["controls"]["paused"], false);
  ASSERT_EQ(doc["plans"].size(), 1u);
  EXPECT_EQ(doc["plans"][0]["devices"], nlohmann::json::array({1}));
}

}  // namespace
