// The admin console: its HTTP head parser and view (pure), and its endpoint
// on a real loopback port, against well-behaved and hostile clients.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/console/console_actor.hpp"
#include "actors/console/console_page.hpp"
#include "actors/console/console_view.hpp"
#include "actors/console/event_log.hpp"
#include "actors/console/http_endpoint.hpp"
#include "actors/console/http_head.hpp"
#include "schema/errors.hpp"
#include "tests/raw_client.hpp"

using namespace cleave;
using cleave::testing::raw_client;

namespace {

TEST(http_head, parses_a_get_and_waits_for_the_rest) {
  auto h = parse_http_head("GET /status?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(h);
  ASSERT_TRUE(h->has_value());
  EXPECT_EQ((*h)->method, "GET");
  EXPECT_EQ((*h)->path, "/status");
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

planner_view two_devices() {
  planner_view pv;
  pv.version = 7;
  pv.quorum = true;
  pv.members = {fleet_member{0, {}, device_profile{"phone", 2e10, 2000000000, 5e7, 1e7, 0.02}},
                fleet_member{3, {}, device_profile{"vm", 6e10, 4000000000, 1.25e8, 1.25e8, 0.001}}};
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
  EXPECT_NE(page.find("fetch(\"/api/state\""), std::string::npos);
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
  caf::actor planner, detector, console;
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
                return caf::make_message(pv.version, pv.quorum, pv.members, pv.suspected);
              },
              [=](subscribe_atom, caf::actor sub) {
                self->send(sub, event_atom::value, fleet_event{fleet_event_kind::dead, 3, 9.5});
              }};
    });
    detector = sys->spawn([]() -> caf::behavior {
      return {[](caf::get_atom) { return std::vector<device_health>{{0, 0.25, false, false}}; }};
    });
    console = sys->spawn(console_actor, [p = planner] { return p; }, [d = detector] { return d; });
    caf::anon_send(console, console_status_atom::value, std::string(R"({"step": 5, "loss": 2.5})"));
    auto bound = open_console_endpoint(*sys, 0, console, opts);
    if (bound) port = *bound;
  }
  ~console_node() {
    for (auto& a : {planner, detector, console}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
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
                                         std::vector<int32_t>{});
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
  }, [] { return caf::actor{}; });
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
  for (auto& a : {first, second, console}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
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

}  // namespace
