// Messages longer than a frame between a coordinator and a PS shard process
// (schema/shard_parts.hpp): parts put back together give the message bit
// for bit; every lying sequence (wrong totals or kinds, out of order,
// overlapping, missing parts, bytes past the total) is refused, and a
// claimed total is never allocated ahead of the bytes; the shard service
// takes requests in parts and sends long answers in parts.

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "actors/ps/shards/shard_service.hpp"
#include "kernels/random.hpp"
#include "schema/byte_io.hpp"
#include "schema/errors.hpp"
#include "schema/shard_codec.hpp"
#include "schema/shard_parts.hpp"
#include "tests/test_util.hpp"

using namespace cleave;
using cleave::testing::random_tensor;

namespace {

constexpr uint16_t attach_kind = static_cast<uint16_t>(shard_kind::attach);

std::vector<char> message(size_t n) {
  std::vector<char> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>(i * 7 + 3);
  return out;
}

// The parts of `whole`, `part_bytes` each.
std::vector<std::vector<char>> parts_of(const std::vector<char>& whole, uint64_t part_bytes) {
  std::vector<std::vector<char>> out;
  for (uint64_t at = 0; at < whole.size(); at += part_bytes)
    out.push_back(encode_shard_part(attach_kind, whole, at, part_bytes));
  return out;
}

caf::error add(shard_part_assembler& a, const std::vector<char>& frame) {
  auto part = decode_shard_part(frame.data(), frame.size());
  return part ? a.add(*part) : part.error();
}

// A part's frame with its header fields rewritten.
std::vector<char> forged(uint16_t kind, uint64_t total, uint64_t offset, size_t bytes) {
  std::vector<char> out(shard_part_header_bytes + bytes, 'x');
  byte_writer w(out.data());
  w.put(kind);
  w.put(total);
  w.put(offset);
  return out;
}

std::string refusal_of(const shard_answer& a) {
  if (a.kind != shard_kind::refused) return {};
  auto why = decode_shard_refusal(a.payload.data(), a.payload.size());
  return why ? *why : "malformed refusal";
}

}  // namespace

TEST(shard_parts, parts_put_back_together_give_the_message) {
  const auto whole = message(1000);
  shard_part_assembler a;
  const auto parts = parts_of(whole, 300);
  ASSERT_EQ(parts.size(), 4u);
  for (size_t i = 0; i < parts.size(); ++i) {
    ASSERT_FALSE(add(a, parts[i])) << "part " << i;
    EXPECT_EQ(a.complete(), i + 1 == parts.size());
  }
  EXPECT_EQ(a.kind(), attach_kind);
  EXPECT_EQ(a.take(), whole);
  EXPECT_FALSE(a.started());
  // Every truncation of a part's header is refused.
  for (size_t n = 0; n < shard_part_header_bytes + 1; ++n) EXPECT_FALSE(decode_shard_part(parts[0].data(), n)) << n;
}

TEST(shard_parts, lying_sequences_are_refused) {
  const auto whole = message(1000);
  const auto parts = parts_of(whole, 300);
  auto refused = [&](std::vector<std::vector<char>> seq) {
    shard_part_assembler a;
    for (const auto& f : seq)
      if (add(a, f)) return true;
    return false;
  };
  EXPECT_TRUE(refused({parts[1]})) << "missing first part";
  EXPECT_TRUE(refused({parts[0], parts[2]})) << "a gap";
  EXPECT_TRUE(refused({parts[0], parts[1], parts[1]})) << "a part twice";
  EXPECT_TRUE(refused({parts[0], forged(attach_kind, 1000, 200, 300)})) << "overlapping";
  EXPECT_TRUE(refused({parts[0], forged(attach_kind, 2000, 300, 300)})) << "another total";
  EXPECT_TRUE(refused({parts[0], forged(static_cast<uint16_t>(shard_kind::products), 1000, 300, 300)}))
    << "another kind";
  EXPECT_TRUE(refused({parts[0], forged(attach_kind, 1000, 300, 800)})) << "past the total";
  // A refusal drops the message: what follows must start a new one.
  shard_part_assembler dropped;
  ASSERT_FALSE(add(dropped, parts[0]));
  ASSERT_TRUE(add(dropped, parts[2]));
  EXPECT_FALSE(dropped.started());
  EXPECT_TRUE(add(dropped, parts[1]));
  EXPECT_FALSE(decode_shard_part(forged(attach_kind, 0, 0, 0).data(), shard_part_header_bytes)) << "empty";
  EXPECT_FALSE(decode_shard_part(forged(attach_kind, 100, 0, 0).data(), shard_part_header_bytes)) << "no bytes";
  const auto huge = forged(attach_kind, max_shard_message_bytes + 1, 0, 10);
  EXPECT_FALSE(decode_shard_part(huge.data(), huge.size())) << "over the cap";
  // A part that claims the largest total allowed costs what it carries, not the total.
  const auto claims = forged(attach_kind, max_shard_message_bytes, 0, 10);
  shard_part_assembler a;
  ASSERT_FALSE(add(a, claims));
  EXPECT_LE(a.buffered(), 20u);
  EXPECT_FALSE(a.complete());
}

TEST(shard_service, takes_requests_and_sends_answers_in_parts) {
  std::vector<shard_attach_entry> entries(1);
  entries[0] = {0, true, 8, 12, 2, 10, random_tensor(8, 8, 1), random_tensor(8, 8, 2), random_tensor(8, 8, 3)};
  entries[0].adam_v.map() = entries[0].adam_v.map().cwiseAbs();
  const auto attach = encode_shard_attach(entries);
  shard_service whole_svc, svc(100);  // svc answers in parts of 100 bytes
  ASSERT_EQ(whole_svc.handle(attach_kind, attach.data(), attach.size()).kind, shard_kind::done);
  const auto parts = parts_of(attach, 256);
  ASSERT_GT(parts.size(), 2u);
  constexpr uint16_t part_kind = static_cast<uint16_t>(shard_kind::part);
  // A request that comes before the last part of the one in parts is refused, and so is the rest.
  ASSERT_EQ(svc.handle(part_kind, parts[0].data(), parts[0].size()).kind, shard_kind::done);
  EXPECT_NE(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::stats), nullptr, 0)).find("last parts"),
            std::string::npos);
  EXPECT_FALSE(refusal_of(svc.handle(part_kind, parts[1].data(), parts[1].size())).empty());
  EXPECT_FALSE(svc.attached());
  for (size_t i = 0; i < parts.size(); ++i) {
    auto a = svc.handle(part_kind, parts[i].data(), parts[i].size());
    ASSERT_EQ(a.kind, shard_kind::done) << "part " << i << ": " << refusal_of(a);
  }
  ASSERT_TRUE(svc.attached());
  // Small kinds never come in parts.
  const auto update = encode_shard_part(static_cast<uint16_t>(shard_kind::update), message(56), 0);
  EXPECT_NE(refusal_of(svc.handle(part_kind, update.data(), update.size())).find("does not come in parts"),
            std::string::npos);
  EXPECT_FALSE(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::next_part), nullptr, 0)).empty());

  // The moments (2 x 8x8 floats and headers) come in parts that add up to the whole answer.
  constexpr uint16_t moments = static_cast<uint16_t>(shard_kind::moments);
  const auto expected = whole_svc.handle(moments, nullptr, 0);
  ASSERT_EQ(expected.kind, shard_kind::tensors);
  shard_part_assembler got;
  auto a = svc.handle(moments, nullptr, 0);
  int n = 0;
  for (; a.kind == shard_kind::part; ++n) {
    auto part = decode_shard_part(a.payload.data(), a.payload.size());
    ASSERT_TRUE(part);
    ASSERT_LE(part->size, 100u);
    ASSERT_FALSE(got.add(*part));
    if (got.complete()) break;
    a = svc.handle(static_cast<uint16_t>(shard_kind::next_part), nullptr, 0);
  }
  ASSERT_TRUE(got.complete()) << refusal_of(a);
  EXPECT_GT(n, 2);
  EXPECT_EQ(got.kind(), static_cast<uint16_t>(shard_kind::tensors));
  EXPECT_EQ(got.take(), expected.payload);
  // Nothing is kept once the last part went out.
  EXPECT_FALSE(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::next_part), nullptr, 0)).empty());
}
