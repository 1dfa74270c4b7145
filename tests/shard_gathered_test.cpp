// The coordinator's attach read where its tensors are and its update answer
// read into its places as it arrives (schema/shard_gathered.hpp): the same
// bytes as the whole-message codec, cut into parts that put back together
// give them bit for bit, and an answer of other tensors is refused.

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "actors/ps/shards/shard_slices.hpp"
#include "schema/errors.hpp"
#include "schema/shard_codec.hpp"
#include "schema/shard_gathered.hpp"
#include "schema/shard_parts.hpp"
#include "tests/test_util.hpp"

using namespace cleave;
using cleave::testing::random_tensor;

namespace {

// Two parameters: a column slice (a strided window), a row slice, and
// moments that are zeros the coordinator never holds (a view with ld 0).
struct fixture {
  tensor w = random_tensor(5, 9, 1), b = random_tensor(4, 6, 2), m = random_tensor(4, 6, 3), v = random_tensor(4, 6, 4);
  std::vector<float> zeros = std::vector<float>(9, 0.0f);
  shard_slice cols{shard_axis::columns, {2, 7}};
  shard_slice rows{shard_axis::rows, {1, 3}};

  std::vector<shard_attach_view> views() const {
    std::vector<shard_attach_view> out(2);
    out[0] = {0, true, 5, 9, 2, 7, window(w, cols), {zeros.data(), 5, 5, 0}, {zeros.data(), 5, 5, 0}};
    out[1] = {1, false, 4, 6, 1, 3, window(b, rows), window(m, rows), window(v, rows)};
    return out;
  }
  std::vector<shard_attach_entry> entries() const {
    std::vector<shard_attach_entry> out(2);
    out[0] = {0, true, 5, 9, 2, 7, {}, tensor(5, 5), tensor(5, 5)};
    copy_out(w, cols, out[0].value);
    out[1] = {1, false, 4, 6, 1, 3, {}, {}, {}};
    copy_out(b, rows, out[1].value);
    copy_out(m, rows, out[1].adam_m);
    copy_out(v, rows, out[1].adam_v);
    return out;
  }
};

std::vector<char> flatten(const gathered_message& m) {
  std::vector<char> out(m.total);
  gathered_reader reader(m);
  reader.copy(0, m.total, out.data());
  return out;
}

TEST(shard_gathered, an_attach_from_views_is_the_attach_frame_byte_for_byte) {
  const fixture f;
  const auto gathered = gather_shard_attach(f.views());
  const auto want = encode_shard_attach(f.entries());
  EXPECT_EQ(gathered.total, want.size());
  EXPECT_LT(gathered.fixed.size(), want.size() / 2);  // the floats were not copied
  EXPECT_EQ(flatten(gathered), want);
}

TEST(shard_gathered, parts_cut_from_the_pieces_put_the_message_back_together) {
  const fixture f;
  const auto gathered = gather_shard_attach(f.views());
  const auto want = encode_shard_attach(f.entries());
  constexpr uint16_t kind = static_cast<uint16_t>(shard_kind::attach);
  for (uint64_t part_bytes : {1u, 7u, 64u, 1000u}) {
    gathered_reader reader(gathered);
    shard_part_assembler whole;
    for (uint64_t at = 0; at < gathered.total; at += part_bytes) {
      const auto frame = encode_shard_part(kind, gathered, reader, at, part_bytes);
      EXPECT_EQ(frame, encode_shard_part(kind, want, at, part_bytes)) << part_bytes << " at " << at;
      auto part = decode_shard_part(frame.data(), frame.size());
      ASSERT_TRUE(part) << describe(part.error());
      ASSERT_FALSE(whole.add(*part));
    }
    ASSERT_TRUE(whole.complete());
    EXPECT_EQ(whole.take(), want) << part_bytes;
  }
}

// The update's values: two windows of one whole tensor (one strided) and an empty one.
TEST(shard_gathered, an_answer_of_tensors_lands_in_its_windows_whatever_its_parts) {
  const tensor a = random_tensor(3, 4, 5), c = random_tensor(2, 7, 6);
  const auto frame = encode_shard_tensors({a.view(), tensor().view(), c.view()});
  for (size_t step : {size_t{1}, size_t{3}, size_t{17}, frame.size()}) {
    tensor whole(3, 11);
    shard_tensors_sink sink({whole.cols_view(0, 4), mut_view<float>{}, mut_view<float>{whole.data() + 4, 2, 7, 11}});
    EXPECT_EQ(sink.total(), frame.size());
    for (size_t at = 0; at < frame.size(); at += step) {
      EXPECT_FALSE(sink.complete());
      ASSERT_FALSE(sink.add(frame.data() + at, std::min(step, frame.size() - at))) << step << " at " << at;
    }
    EXPECT_TRUE(sink.complete());
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t k = 0; k < 11; ++k) {
        const float want = k < 4 ? a.at(r, k) : r < 2 ? c.at(r, k - 4) : 0.0f;
        ASSERT_EQ(whole.at(r, k), want) << step << ": " << r << "," << k;
      }
  }
}

TEST(shard_gathered, an_answer_of_other_tensors_is_refused) {
  const tensor a = random_tensor(3, 4, 5);
  const auto frame = encode_shard_tensors({a.view()});
  tensor whole(3, 4), wide(3, 5);
  shard_tensors_sink two({whole.view(), whole.view()});
  EXPECT_TRUE(two.add(frame.data(), frame.size()));  // the count
  shard_tensors_sink shape({wide.view()});
  EXPECT_TRUE(shape.add(frame.data(), frame.size()));  // the shape
  shard_tensors_sink longer({whole.view()});
  auto more = frame;
  more.push_back(0);
  EXPECT_TRUE(longer.add(more.data(), more.size()));  // bytes past the last tensor
  EXPECT_FALSE(longer.complete());
  shard_tensors_sink shorter({whole.view()});
  EXPECT_FALSE(shorter.add(frame.data(), frame.size() - 1));
  EXPECT_FALSE(shorter.complete());
}

}  // namespace
