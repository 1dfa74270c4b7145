// The two extreme-classification tasks built from the installed Debian
// packages (dict-gcide, wordnet-base, wamerican-insane) by
// training/data/build_xc_datasets.py, read back with the C++ reader. The full
// build takes over a minute on a shared 2-core machine, so this builds the
// --slice 16 variant (every 16th definition and word); one test builds it a
// second time and insists the two builds are byte-identical. CLEAVE_XC_BUILDER is the script's path
// (tests/CMakeLists.txt).

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "tests/test_util.hpp"
#include "training/data/xc_format.hpp"

using namespace cleave;

namespace {

constexpr int slice = 16;

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int64_t lines_in(const std::string& path) {
  const std::string text = contents(path);
  return std::count(text.begin(), text.end(), '\n');
}

// Every sample has exactly one label (the reader already holds ids to the
// header's range) and at least one feature.
void expect_single_label_rows(const sparse_dataset& d, const std::string& what) {
  ASSERT_EQ(d.label_ids.size(), static_cast<size_t>(d.samples)) << what << ": one label per sample";
  for (int64_t r = 0; r < d.samples; ++r) {
    ASSERT_EQ(d.label_offsets[r + 1] - d.label_offsets[r], 1) << what << " row " << r;
    ASSERT_GT(d.feature_offsets[r + 1], d.feature_offsets[r]) << what << " row " << r << " has no features";
  }
}

void build(const std::string& out) {
  const std::string cmd = std::string("python3 ") + CLEAVE_XC_BUILDER + " --slice " + std::to_string(slice) +
                          " --out " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

class XcDatasets : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { build(first_.path()); }
  static cleave::testing::scratch_dir first_;
};

cleave::testing::scratch_dir XcDatasets::first_;

TEST_F(XcDatasets, BuildsAreByteIdentical) {
  cleave::testing::scratch_dir second_;
  build(second_.path());
  for (const char* task : {"gcide-nextword", "spell-670k"})
    for (const char* file : {"train.txt", "test.txt", "labels.txt"}) {
      const std::string a = contents(first_.path() + "/" + task + "/" + file);
      EXPECT_FALSE(a.empty()) << task << "/" << file;
      EXPECT_TRUE(a == contents(second_.path() + "/" + task + "/" + file)) << task << "/" << file << " differs";
    }
}

TEST_F(XcDatasets, GcideNextwordReadsBack) {
  auto split = load_xc_dataset("gcide-nextword", first_.path());
  ASSERT_TRUE(split) << describe(split.error());
  // The full build has 51,177 classes (words seen 3 times in train) over
  // 358,572 definitions; a sixteenth of the definitions keeps about 10k.
  EXPECT_GE(split->train.labels, 8000);
  EXPECT_LE(split->train.labels, 13000);
  EXPECT_EQ(split->train.features, 1 << 18);
  // Every 10th definition is test; each definition yields a sample per word.
  EXPECT_GT(split->train.samples, 200000);
  EXPECT_GT(split->test.samples, split->train.samples / 12);
  EXPECT_LT(split->test.samples, split->train.samples / 7);
  expect_single_label_rows(split->train, "train");
  expect_single_label_rows(split->test, "test");
  EXPECT_EQ(lines_in(first_.path() + "/gcide-nextword/labels.txt"), split->train.labels);
}

TEST_F(XcDatasets, Spell670kReadsBack) {
  auto split = load_xc_dataset("spell-670k", first_.path());
  ASSERT_TRUE(split) << describe(split.error());
  // wamerican-insane lists 663,473 words; a class for every 16th.
  const int64_t words = (663473 + slice - 1) / slice;
  EXPECT_NEAR(split->train.labels, words, words / 50);
  EXPECT_EQ(split->train.features, 1 << 17);
  EXPECT_EQ(split->train.samples, 2 * split->train.labels);  // two misspellings a word
  EXPECT_EQ(split->test.samples, (split->train.labels + 7) / 8);  // one of every 8th word
  expect_single_label_rows(split->train, "train");
  expect_single_label_rows(split->test, "test");
  EXPECT_EQ(lines_in(first_.path() + "/spell-670k/labels.txt"), split->train.labels);
  // A misspelling is a few edits: a word's grams mostly survive, so its two
  // train samples share features.
  int64_t sharing = 0;
  for (int64_t w = 0; w < split->train.labels; ++w) {
    const auto& d = split->train;
    std::vector<int32_t> a(d.feature_ids.begin() + d.feature_offsets[2 * w],
                           d.feature_ids.begin() + d.feature_offsets[2 * w + 1]);
    std::vector<int32_t> b(d.feature_ids.begin() + d.feature_offsets[2 * w + 1],
                           d.feature_ids.begin() + d.feature_offsets[2 * w + 2]), both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    sharing += !both.empty();
  }
  EXPECT_GT(sharing, split->train.labels * 9 / 10);
}

}  // namespace
