// One page of the console's device table, cut on the server: the query's
// parameters are refused unless each is known and in range, and the page
// holds the rows the page would show, in its order, with the counts it
// needs for the rest of the fleet.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/console/device_page.hpp"
#include "schema/errors.hpp"

using namespace cleave;
using nlohmann::json;

namespace {

// n devices of the fleet, device 3 suspected; accounts for the even ones
// (tiles = 100 - id) and one device (1000) the fleet no longer lists.
json fleet_doc(int n) {
  json devices = json::array(), accounts = json::array();
  for (int id = 0; id < n; ++id) {
    devices.push_back({{"id", id}, {"profile", id % 2 ? "phone" : "laptop"},
                       {"state", id == 3 ? "suspected" : "alive"}, {"phi", 0.01 * id}});
    if (id % 2 == 0) accounts.push_back({{"id", id}, {"tiles", 100 - id}, {"busy_seconds", 1.0}});
  }
  accounts.push_back({{"id", 1000}, {"tiles", 7}, {"profile", "edge"}});
  return {{"training", {{"step", 5}, {"seconds", 10.0}, {"per_device", accounts}}},
          {"fleet", {{"alive", n - 1}, {"devices", devices}}}};
}

std::vector<long long> ids_of(const json& doc) { return doc["fleet"]["page"]["ids"].get<std::vector<long long>>(); }

}  // namespace

TEST(device_page, an_empty_query_is_the_whole_document) {
  auto q = parse_device_page_query("");
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->has_value());
}

TEST(device_page, reads_every_parameter) {
  auto q = parse_device_page_query("page=2&per_page=50&sort=tiles&dir=desc&filter=Pho%6Ee+x");
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->has_value());
  EXPECT_EQ((*q)->page, 2u);
  EXPECT_EQ((*q)->per_page, 50u);
  EXPECT_EQ((*q)->sort, "tiles");
  EXPECT_TRUE((*q)->descending);
  EXPECT_EQ((*q)->filter, "phone x");
}

TEST(device_page, refuses_hostile_queries_with_one_line) {
  for (const std::string& bad : std::vector<std::string>{"per_page=0", "per_page=501", "per_page=-1", "per_page=1e3", "per_page=0x10", "page=1000001",
        "page=99999999999999999999", "page=", "sort=__proto__", "sort=id;drop", "dir=up", "page=1&page=2",
        "evil=1", "filter=%zz", "filter=%0a", "filter=" + std::string(65, 'a'),
        "filter=" + std::string(600, 'a')}) {
    auto q = parse_device_page_query(bad);
    ASSERT_FALSE(q) << bad;
    const auto why = describe(q.error());
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
}

TEST(device_page, cuts_one_page_and_counts_the_rest) {
  device_page_query q;
  q.per_page = 10;
  q.page = 1;
  const auto doc = page_console_document(fleet_doc(1000), q);
  const auto& page = doc["fleet"]["page"];
  EXPECT_EQ(page["total"], 1001);  // the gone device too
  EXPECT_EQ(page["matched"], 1001);
  EXPECT_EQ(page["pages"], 101);
  EXPECT_EQ(page["states"]["alive"], 999);
  EXPECT_EQ(page["states"]["suspected"], 1);
  EXPECT_EQ(page["states"]["gone"], 1);
  EXPECT_EQ(ids_of(doc), (std::vector<long long>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
  EXPECT_EQ(doc["fleet"]["devices"].size(), 10u);
  EXPECT_EQ(doc["training"]["per_device"].size(), 5u);  // the even ones have accounts
  EXPECT_EQ(doc["fleet"]["alive"], 999);                // the rest of the document is as it was
  EXPECT_EQ(doc["training"]["step"], 5);
  q.page = 500;  // past the end: empty, counts intact
  const auto past = page_console_document(fleet_doc(1000), q);
  EXPECT_TRUE(past["fleet"]["devices"].empty());
  EXPECT_EQ(past["fleet"]["page"]["total"], 1001);
}

TEST(device_page, sorts_and_filters_as_the_page_did) {
  device_page_query q;
  q.per_page = 4;
  q.sort = "tiles";
  q.descending = true;
  // Most tiles first; devices without accounts (the odd ones) last, by id.
  EXPECT_EQ(ids_of(page_console_document(fleet_doc(6), q)), (std::vector<long long>{0, 2, 4, 1000}));
  q.descending = false;
  EXPECT_EQ(ids_of(page_console_document(fleet_doc(6), q)), (std::vector<long long>{1000, 4, 2, 0}));
  q.sort = "state";
  q.per_page = 2;
  EXPECT_EQ(ids_of(page_console_document(fleet_doc(6), q)), (std::vector<long long>{0, 1}));
  q.filter = "susp";
  const auto f = page_console_document(fleet_doc(6), q);
  EXPECT_EQ(ids_of(f), (std::vector<long long>{3}));
  EXPECT_EQ(f["fleet"]["page"]["matched"], 1);
  EXPECT_EQ(f["fleet"]["page"]["total"], 7);
  q.filter = "edge";  // the gone device's profile comes from its accounts
  q.sort = "id";
  EXPECT_EQ(ids_of(page_console_document(fleet_doc(6), q)), (std::vector<long long>{1000}));
}

TEST(device_page, a_document_without_a_fleet_or_training_gets_an_empty_page) {
  device_page_query q;
  const auto doc = page_console_document(json{{"training", nullptr}}, q);
  EXPECT_TRUE(doc["fleet"]["devices"].empty());
  EXPECT_EQ(doc["fleet"]["page"]["total"], 0);
  EXPECT_TRUE(doc["training"].is_null());
}
