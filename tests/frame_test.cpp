// The bulk channel's pure parts (frame.hpp): the frame and hello codecs and
// the receive and send windows' arithmetic, without sockets or actors.

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "actors/transport/frame.hpp"
#include "schema/errors.hpp"

using namespace cleave;
using namespace cleave::transport;

namespace {

TEST(Frame, HeaderRoundTrip) {
  for (auto h : {frame_header{0, 0, 0}, frame_header{1, 1, 42},
                 frame_header{0xFEFF, default_max_payload, ~uint64_t{0}},
                 frame_header{kind_credit, 0, 123456789}}) {
    auto bytes = encode_header(h);
    auto back = decode_header(bytes.data(), bytes.size(), default_max_payload);
    ASSERT_TRUE(back) << cleave::describe(back.error());
    EXPECT_EQ(*back, h);
  }
}

TEST(Frame, HeaderLayoutIsLittleEndian) {
  auto b = encode_header(frame_header{0x0102, 0x030405, 0x0A0B});
  EXPECT_EQ(std::string(b.data(), 4), "CLVF");
  EXPECT_EQ(b[4], 1);  // version
  EXPECT_EQ(b[5], 0);
  EXPECT_EQ(b[6], 0x02);  // kind
  EXPECT_EQ(b[7], 0x01);
  EXPECT_EQ(b[8], 0x05);  // length
  EXPECT_EQ(b[9], 0x04);
  EXPECT_EQ(b[10], 0x03);
  EXPECT_EQ(b[16], 0x0B);  // tag
  EXPECT_EQ(b[17], 0x0A);
}

TEST(Frame, RejectsBadMagic) {
  auto b = encode_header(frame_header{1, 10, 0});
  b[0] = 'X';
  auto h = decode_header(b.data(), b.size(), default_max_payload);
  ASSERT_FALSE(h);
  EXPECT_NE(cleave::describe(h.error()).find("magic"), std::string::npos);
}

TEST(Frame, RejectsBadVersion) {
  auto b = encode_header(frame_header{1, 10, 0});
  b[4] = 2;
  auto h = decode_header(b.data(), b.size(), default_max_payload);
  ASSERT_FALSE(h);
  EXPECT_NE(cleave::describe(h.error()).find("version 2"), std::string::npos);
}

TEST(Frame, RejectsOversizeLength) {
  auto b = encode_header(frame_header{1, uint64_t{4} << 30, 0});  // claims 4 GiB
  auto h = decode_header(b.data(), b.size(), default_max_payload);
  ASSERT_FALSE(h);
  EXPECT_NE(cleave::describe(h.error()).find("exceeds the cap"), std::string::npos);
  // The cap is the caller's: exactly at the cap passes, one over fails.
  auto at = encode_header(frame_header{1, 1000, 0});
  EXPECT_TRUE(decode_header(at.data(), at.size(), 1000));
  EXPECT_FALSE(decode_header(at.data(), at.size(), 999));
}

TEST(Frame, RejectsWrongHeaderSize) {
  auto b = encode_header(frame_header{1, 10, 0});
  EXPECT_FALSE(decode_header(b.data(), b.size() - 1, default_max_payload));
}

TEST(Frame, HelloRoundTripAndRejection) {
  auto b = encode_hello(hello{1 << 20, 5000});
  auto h = decode_hello(b.data(), b.size());
  ASSERT_TRUE(h);
  EXPECT_EQ(h->receive_window, 1u << 20);
  EXPECT_EQ(h->max_payload, 5000u);
  auto zero = encode_hello(hello{0, 5000});
  EXPECT_FALSE(decode_hello(zero.data(), zero.size()));
  EXPECT_FALSE(decode_hello(b.data(), 15));
}

TEST(Window, ReceiverAdmitsWithinWindowAndCredits) {
  receive_window rw(frame_cost(1000) * 2);
  EXPECT_FALSE(rw.admit(1000));
  EXPECT_FALSE(rw.admit(1000));
  EXPECT_TRUE(rw.admit(0));  // a third frame, even empty, overruns
  rw.consumed(1000);
  EXPECT_EQ(rw.take_credit(false), frame_cost(1000));  // half the window: credit at once
  EXPECT_FALSE(rw.admit(0));
}

TEST(Window, CreditBatchingAndIdleFlush) {
  receive_window rw(uint64_t{1} << 20);
  ASSERT_FALSE(rw.admit(10));
  ASSERT_FALSE(rw.admit(10));
  rw.consumed(10);
  EXPECT_EQ(rw.take_credit(false), 0u);  // small, sink busy: batch
  rw.consumed(10);
  EXPECT_EQ(rw.take_credit(true), 2 * frame_cost(10));  // sink idle: flush all
  EXPECT_EQ(rw.outstanding(), 0u);
}

TEST(Window, LazyCreditWaitsOnAnIdleSinkUntilItIsWorthAFrame) {
  receive_window rw(uint64_t{1} << 20);
  const uint64_t lazy = 3 * frame_cost(0);
  for (int i = 0; i < 2; ++i) {
    ASSERT_FALSE(rw.admit(0));
    rw.consumed(0);
    EXPECT_EQ(rw.take_credit(true, lazy), 0u);  // a heartbeat's credit waits
  }
  ASSERT_FALSE(rw.admit(0));
  rw.consumed(0);
  EXPECT_EQ(rw.take_credit(true, lazy), lazy);  // then all of it goes in one frame
  EXPECT_EQ(rw.outstanding(), 0u);
  ASSERT_FALSE(rw.admit(0));
  rw.consumed(0);
  EXPECT_EQ(rw.take_credit(true), frame_cost(0));  // without lazy: at once, as before
}

TEST(Window, OversizeFrameAllowedOnlyWhenNothingOutstanding) {
  receive_window rw(1 << 16);
  EXPECT_FALSE(rw.admit(1 << 20));  // alone: fine
  EXPECT_TRUE(rw.admit(1));         // anything on top: overrun
  send_window sw;
  EXPECT_FALSE(sw.can_send(1));  // closed until hello
  sw.open(1 << 16);
  EXPECT_TRUE(sw.can_send(1 << 20));
  sw.sent(1 << 20);
  EXPECT_FALSE(sw.can_send(0));
  EXPECT_TRUE(sw.credit(frame_cost(1 << 20) + 1));  // more than in flight
  EXPECT_FALSE(sw.credit(frame_cost(1 << 20)));
  EXPECT_TRUE(sw.can_send(0));
}

}  // namespace
