// Fault injection (actors/device/lies.hpp): each lie changes exactly what it
// says, rates hold, a seed replays the same lies, and bad specs and files
// are refused with the entry named.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "actors/device/byzantine_file.hpp"
#include "actors/device/lies.hpp"
#include "schema/errors.hpp"
#include "test_util.hpp"

using namespace cleave;

namespace {

std::vector<float> ramp(int64_t n, float start = -3.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + 0.5f * static_cast<float>(i);
  return v;
}

tile_result result(uint64_t step, uint32_t tile, int64_t rows, int64_t cols, float start = -3.0f) {
  tile_result r;
  r.key = tile_key{step, 0, tile};
  r.device = 3;
  r.rows = rows;
  r.cols = cols;
  r.data = ramp(rows * cols, start);
  return r;
}

std::vector<size_t> differing(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<size_t> out;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) out.push_back(i);  // NaN differs from everything
  return out;
}

std::string error_of(const caf::expected<std::vector<lie>>& parsed) {
  return parsed ? "parsed" : describe(parsed.error());
}

std::string error_of(const caf::expected<byzantine_fleet>& parsed) {
  return parsed ? "parsed" : describe(parsed.error());
}

}  // namespace

TEST(Lies, ElementMovesExactlyOneElementByTheStatedAmount) {
  const auto honest = ramp(4 * 5);
  const double rms = tile_rms(honest);
  rng r(7);
  for (int trial = 0; trial < 50; ++trial) {
    auto data = honest;
    ASSERT_TRUE(corrupt_element(data, 4, 5, 0.25, r));
    const auto diff = differing(honest, data);
    ASSERT_EQ(diff.size(), 1u);
    const double c = honest[diff[0]];
    EXPECT_NEAR(std::abs(data[diff[0]] - c), 0.25 * std::max(std::abs(c), rms), 1e-5);
  }
  // An all-zero tile still moves (by size itself): a lie must not vanish.
  std::vector<float> zeros(6, 0.0f);
  ASSERT_TRUE(corrupt_element_at(zeros, 2, 3, 4, 2.0, true));
  EXPECT_EQ(zeros[4], -2.0f);
}

TEST(Lies, RowMovesEveryElementOfExactlyOneRow) {
  const auto honest = ramp(6 * 4);
  const double rms = tile_rms(honest);
  rng r(11);
  auto data = honest;
  ASSERT_TRUE(corrupt_row(data, 6, 4, 1.0, r));
  const auto diff = differing(honest, data);
  ASSERT_EQ(diff.size(), 4u);
  const size_t row = diff[0] / 4;
  for (size_t j = 0; j < 4; ++j) {
    EXPECT_EQ(diff[j], row * 4 + j);
    const double c = honest[diff[j]];
    EXPECT_NEAR(std::abs(data[diff[j]] - c), std::max(std::abs(c), rms), 1e-5);
  }
}

TEST(Lies, ScaleMultipliesTheWholeTile) {
  const auto honest = ramp(3 * 3);
  auto data = honest;
  ASSERT_TRUE(corrupt_scale(data, 3, 3, 0.5));
  for (size_t i = 0; i < honest.size(); ++i) EXPECT_FLOAT_EQ(data[i], honest[i] * 1.5f);
  EXPECT_EQ(default_lie_size(lie_kind::scale), 0.5);
  EXPECT_EQ(lie{lie_kind::scale}.size, 0.5);
  EXPECT_EQ(lie{lie_kind::element}.size, 1.0);
}

TEST(Lies, NanTurnsExactlyOneElementIntoNan) {
  const auto honest = ramp(5 * 2);
  auto data = honest;
  rng r(3);
  ASSERT_TRUE(corrupt_nan(data, 5, 2, r));
  const auto diff = differing(honest, data);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_TRUE(std::isnan(data[diff[0]]));
}

TEST(Lies, ShapeAddsOneColumnAndKeepsTheRest) {
  const auto honest = ramp(3 * 4);
  auto data = honest;
  const int64_t cols = corrupt_shape(data, 3, 4);
  ASSERT_EQ(cols, 5);
  ASSERT_EQ(data.size(), 15u);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(data[static_cast<size_t>(i * 5 + j)], honest[static_cast<size_t>(i * 4 + j)]);
    EXPECT_EQ(data[static_cast<size_t>(i * 5 + 4)], 0.0f);
  }
  liar l({lie{lie_kind::shape}}, 1, 0);
  auto r = result(1, 0, 3, 4);
  ASSERT_TRUE(l.apply(r));
  EXPECT_EQ(r.cols, 5);
  EXPECT_EQ(static_cast<int64_t>(r.data.size()), r.rows * r.cols);
}

TEST(Lies, StaleReturnsTheEarlierStepAndIsHonestTheFirstTime) {
  liar l({lie{lie_kind::stale}}, 1, 0);
  auto first = result(1, 2, 2, 3, 0.0f);
  const auto first_data = first.data;
  EXPECT_FALSE(l.apply(first));  // nothing earlier: honest
  EXPECT_EQ(first.data, first_data);
  EXPECT_EQ(l.told(), 0u);

  auto same_step = result(1, 2, 2, 3, 9.0f);  // a copy of the same tile: not earlier
  EXPECT_FALSE(l.apply(same_step));

  auto other_shape = result(2, 2, 3, 2, 5.0f);
  EXPECT_FALSE(l.apply(other_shape));  // same tile index, another shape: honest

  auto later = result(3, 2, 2, 3, 100.0f);
  const auto later_honest = later.data;
  ASSERT_TRUE(l.apply(later));
  EXPECT_EQ(later.data, same_step.data);  // the last honest answer of an earlier step
  EXPECT_EQ(l.told(lie_kind::stale), 1u);

  auto next = result(4, 2, 2, 3, 7.0f);
  ASSERT_TRUE(l.apply(next));
  EXPECT_EQ(next.data, later_honest);  // what it computed at step 3, not what it told

  auto other_tile = result(5, 9, 2, 3);
  EXPECT_FALSE(l.apply(other_tile));
}

TEST(Lies, StaleMemoryIsBounded) {
  liar l({lie{lie_kind::stale}}, 1, 0);
  const auto cap = static_cast<uint32_t>(liar::stale_capacity);
  for (uint32_t t = 0; t <= cap; ++t) {
    auto r = result(1, t, 1, 2);
    l.apply(r);
  }
  auto evicted = result(2, 0, 1, 2);  // the oldest, gone
  EXPECT_FALSE(l.apply(evicted));
  auto kept = result(2, cap, 1, 2);
  EXPECT_TRUE(l.apply(kept));
}

TEST(Lies, RatesHoldStatistically) {
  liar l({lie{lie_kind::scale, 0.3}}, 42, 5);
  int lied = 0;
  for (int i = 0; i < 10000; ++i) {
    auto r = result(static_cast<uint64_t>(i + 1), 0, 2, 2, 1.0f);
    lied += l.apply(r) ? 1 : 0;
  }
  EXPECT_GT(lied, 2800);  // 3000 +- 4.4 sigma
  EXPECT_LT(lied, 3200);
  EXPECT_EQ(l.told(lie_kind::scale), static_cast<uint64_t>(lied));

  // Two lies: the first that fires wins, so the second fires at (1 - 0.5) * 0.4.
  liar two({lie{lie_kind::element, 0.5}, lie{lie_kind::nan, 0.4}}, 42, 5);
  for (int i = 0; i < 10000; ++i) {
    auto r = result(1, 0, 2, 2);
    two.apply(r);
  }
  EXPECT_NEAR(static_cast<double>(two.told(lie_kind::element)), 5000, 250);
  EXPECT_NEAR(static_cast<double>(two.told(lie_kind::nan)), 2000, 200);
}

TEST(Lies, SameSeedSameLies) {
  auto run = [](uint64_t seed, int64_t device) {
    liar l({lie{lie_kind::element, 0.5}, lie{lie_kind::row, 0.5}}, seed, device);
    std::vector<float> all;
    for (int i = 0; i < 200; ++i) {
      auto r = result(1, 0, 3, 3);
      l.apply(r);
      all.insert(all.end(), r.data.begin(), r.data.end());
    }
    return all;
  };
  EXPECT_EQ(run(1, 3), run(1, 3));
  EXPECT_NE(run(1, 3), run(1, 4));
  EXPECT_NE(run(1, 3), run(2, 3));
}

TEST(Lies, ParsesSpecs) {
  auto lies = parse_lies("element:0.5,stale:1,scale:0.25:2");
  ASSERT_TRUE(lies) << describe(lies.error());
  ASSERT_EQ(lies->size(), 3u);
  EXPECT_EQ((*lies)[0], (lie{lie_kind::element, 0.5, 1.0}));
  EXPECT_EQ((*lies)[1], (lie{lie_kind::stale, 1.0, 1.0}));
  EXPECT_EQ((*lies)[2], (lie{lie_kind::scale, 0.25, 2.0}));
  for (size_t i = 0; i < lie_kind_count; ++i) {
    auto k = static_cast<lie_kind>(i);
    auto back = parse_lie_kind(to_string(k));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, k);
  }
}

TEST(Lies, RefusesBadSpecs) {
  EXPECT_NE(error_of(parse_lies("")).find("no lies"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("bogus:1")).find("unknown lie kind 'bogus'"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:0")).find("lie 'element:0': rate must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:1.5")).find("rate must be in (0, 1]"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:x")).find("rate is not a number"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:1:0")).find("size must be finite and > 0"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:1:inf")).find("size must be finite"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:1:nan")).find("size must be finite"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element")).find("expected KIND:RATE[:SIZE]"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:1:1:1")).find("expected KIND:RATE[:SIZE]"), std::string::npos);
  EXPECT_NE(error_of(parse_lies("element:1,")).find("lie '': "), std::string::npos);
  EXPECT_NE(error_of(parse_lies("nan:1,nan:0.5")).find("given twice"), std::string::npos);
}

TEST(Byzantine, ReadsAFile) {
  const std::string text = R"({"liars": [
    {"device": 3, "lies": [{"kind": "element", "rate": 0.5, "size": 1.0}, {"kind": "stale", "rate": 1}]},
    {"device": 7, "lies": [{"kind": "nan", "rate": 0.2}, {"kind": "scale"}]}]})";
  auto fleet = byzantine_from_text(text, "b.json", 8);
  ASSERT_TRUE(fleet) << describe(fleet.error());
  ASSERT_EQ(fleet->size(), 2u);
  EXPECT_EQ(fleet->at(3), (std::vector<lie>{lie{lie_kind::element, 0.5, 1.0}, lie{lie_kind::stale, 1.0}}));
  EXPECT_EQ(fleet->at(7), (std::vector<lie>{lie{lie_kind::nan, 0.2}, lie{lie_kind::scale, 1.0, 0.5}}));
  EXPECT_EQ(describe_byzantine(*fleet, 8), "2 of 8 emulated devices lie: 3 (element, stale), 7 (nan, scale)");

  cleave::testing::scratch_dir dir;
  std::ofstream(dir.file("b.json")) << text;
  auto from_file = byzantine_from_file(dir.file("b.json"), 8);
  ASSERT_TRUE(from_file) << describe(from_file.error());
  EXPECT_EQ(*from_file, *fleet);
  EXPECT_NE(error_of(byzantine_from_file(dir.file("missing.json"), 8)).find("cannot open byzantine file"),
            std::string::npos);
}

TEST(Byzantine, RefusesBadFiles) {
  auto refused = [](const std::string& text) { return error_of(byzantine_from_text(text, "b.json", 4)); };
  auto one = [](const std::string& lie_json, int device = 1) {
    return R"({"liars": [{"device": )" + std::to_string(device) + R"(, "lies": [)" + lie_json + "]}]}";
  };
  EXPECT_EQ(refused("{not json"), "b.json: not valid JSON");
  EXPECT_EQ(refused(R"({"events": []})"), R"(b.json: expected an object with a "liars" array)");
  EXPECT_EQ(refused(R"({"liars": [], "extra": 1})"), R"(b.json: unknown key "extra" (expected liars))");
  EXPECT_EQ(refused(one(R"({"kind": "bogus"})")),
            "b.json: liars[0].lies[0]: unknown lie kind 'bogus' (expected element, row, scale, stale, nan or shape)");
  EXPECT_EQ(refused(one(R"({"kind": "nan", "rate": 0})")), "b.json: liars[0].lies[0]: rate must be in (0, 1]");
  EXPECT_EQ(refused(one(R"({"kind": "row"}, {"kind": "nan", "rate": 1.5})")),
            "b.json: liars[0].lies[1]: rate must be in (0, 1]");
  EXPECT_EQ(refused(one(R"({"kind": "row", "size": -1})")), "b.json: liars[0].lies[0]: size must be finite and > 0");
  EXPECT_EQ(refused(one(R"({"kind": "row", "rate": "1"})")), "b.json: liars[0].lies[0]: rate must be a number");
  EXPECT_EQ(refused(one(R"({"kind": "row", "rtae": 1})")),
            R"(b.json: liars[0].lies[0]: unknown key "rtae" (expected kind, rate, size))");
  EXPECT_EQ(refused(one(R"({"kind": "row"})", 4)), "b.json: liars[0]: device 4 is not in the fleet [0, 4)");
  EXPECT_EQ(refused(one(R"({"kind": "row"})", -1)), "b.json: liars[0]: device -1 is not in the fleet [0, 4)");
  EXPECT_EQ(refused(one("")), "b.json: liars[0]: lies must be a non-empty array");
  EXPECT_EQ(refused(R"({"liars": [{"device": 2, "lies": [{"kind": "nan"}]},
                                  {"device": 2, "lies": [{"kind": "row"}]}]})"),
            "b.json: liars[1]: device 2 is listed twice");
  EXPECT_EQ(refused(R"({"liars": [{"device": 2, "lies": [{"kind": "nan"}], "when": 3}]})"),
            R"(b.json: liars[0]: unknown key "when" (expected device, lies))");
}
