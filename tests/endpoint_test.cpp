#include <gtest/gtest.h>

#include "schema/endpoint.hpp"
#include "schema/errors.hpp"

using namespace cleave;

TEST(endpoint, splits_host_and_port_at_the_last_colon) {
  auto at = parse_endpoint("10.0.0.2:4100", "--connect", false);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->first, "10.0.0.2");
  EXPECT_EQ(at->second, 4100);
  auto v6 = parse_endpoint("::1:80", "--connect", false);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->first, "::1");
  EXPECT_EQ(v6->second, 80);
}

TEST(endpoint, a_listener_may_leave_out_the_host) {
  auto port_only = parse_endpoint("4100", "--listen", true);
  ASSERT_TRUE(port_only);
  EXPECT_EQ(port_only->first, "");
  EXPECT_EQ(port_only->second, 4100);
  auto any = parse_endpoint(":0", "--listen", true);
  ASSERT_TRUE(any);
  EXPECT_EQ(any->second, 0);
}

TEST(endpoint, refuses_what_is_not_a_port_and_names_where_it_came_from) {
  for (const char* bad : {"host:", "host:99999", "host:-1", "host:+80", "host: 80", "host:80x",
                          "host:0000080", "host"}) {
    auto at = parse_endpoint(bad, "--edge", false);
    ASSERT_FALSE(at) << bad;
    EXPECT_NE(describe(at.error()).find("--edge: '" + std::string(bad) + "'"), std::string::npos)
      << describe(at.error());
  }
  auto no_host = parse_endpoint(":4100", "--connect", false);
  ASSERT_FALSE(no_host);
  EXPECT_NE(describe(no_host.error()).find("needs host:port"), std::string::npos);
}
