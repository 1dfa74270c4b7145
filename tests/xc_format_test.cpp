// Tests for the XMLRepository reader and writer (training/data/xc_format.hpp):
// round trips through a file, one hostile line per kind of error, and the
// --dataset names.

#include "training/data/xc_format.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "tests/test_util.hpp"

using namespace cleave;

namespace {

// A dataset with what real files hold: rows without labels, rows with several,
// values that are not round in decimal, ids at both ends of their range.
sparse_dataset random_dataset(uint32_t seed, int64_t samples, int64_t features, int64_t labels) {
  std::mt19937 rng(seed);
  sparse_dataset d;
  d.samples = samples;
  d.features = features;
  d.labels = labels;
  for (int64_t r = 0; r < samples; ++r) {
    const int n_labels = r % 5 == 0 ? 0 : 1 + static_cast<int>(rng() % 4);
    std::vector<int32_t> ls;
    for (int k = 0; k < n_labels; ++k) ls.push_back(static_cast<int32_t>(rng() % labels));
    if (r == 1) ls.push_back(static_cast<int32_t>(labels - 1));
    std::sort(ls.begin(), ls.end());
    ls.erase(std::unique(ls.begin(), ls.end()), ls.end());
    d.label_ids.insert(d.label_ids.end(), ls.begin(), ls.end());
    d.label_offsets.push_back(static_cast<int64_t>(d.label_ids.size()));

    std::vector<int32_t> fs;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 12); k < n; ++k)
      fs.push_back(static_cast<int32_t>(rng() % features));
    if (r == 2) fs.push_back(0), fs.push_back(static_cast<int32_t>(features - 1));
    std::sort(fs.begin(), fs.end());
    fs.erase(std::unique(fs.begin(), fs.end()), fs.end());
    for (int32_t f : fs) {
      d.feature_ids.push_back(f);
      d.values.push_back(std::ldexp(static_cast<float>(rng() % 100000) - 20000.f, -static_cast<int>(rng() % 30)) /
                         3.f);
    }
    d.feature_offsets.push_back(static_cast<int64_t>(d.feature_ids.size()));
  }
  return d;
}

void expect_same(const sparse_dataset& a, const sparse_dataset& b) {
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.feature_offsets, b.feature_offsets);
  EXPECT_EQ(a.feature_ids, b.feature_ids);
  EXPECT_EQ(a.label_offsets, b.label_offsets);
  EXPECT_EQ(a.label_ids, b.label_ids);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t k = 0; k < a.values.size(); ++k) ASSERT_EQ(a.values[k], b.values[k]) << "value " << k;
}

class XcFormat : public ::testing::Test {
 protected:
  std::string write_text(const std::string& name, const std::string& text) {
    const std::string path = dir_.file(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // text must be refused with one line naming the file, `where` (", line N")
  // and `word`; read_xc and parse_xc must agree on it.
  void expect_refused(const std::string& text, const std::string& where, const std::string& word) {
    const std::string path = write_text("bad.txt", text);
    for (const auto& r : {read_xc(path), parse_xc(text, path)}) {
      ASSERT_FALSE(r) << "accepted: " << text;
      const std::string msg = describe(r.error());
      EXPECT_NE(msg.find(path + where), std::string::npos) << msg;
      EXPECT_NE(msg.find(word), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }

  cleave::testing::scratch_dir dir_;
};

TEST_F(XcFormat, RoundTripsThroughAFile) {
  const auto d = random_dataset(7, 300, 1000, 50);
  const std::string path = dir_.file("train.txt");
  ASSERT_FALSE(write_xc(d, path));
  auto back = read_xc(path);
  ASSERT_TRUE(back) << describe(back.error());
  expect_same(d, *back);
  // Writing what was read gives the same bytes.
  auto again = format_xc(*back);
  ASSERT_TRUE(again);
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), *again);
}

TEST_F(XcFormat, ReadsTheRepositoryConventions) {
  // Unsorted ids, a sample without labels, CRLF, tabs and a final line
  // without a newline, as files in the wild have them.
  auto d = parse_xc("3 10 5\r\n4,1 7:0.5\t2:1.5e-1 \r\n 9:3\n0 0:1", "mem");
  ASSERT_TRUE(d) << describe(d.error());
  EXPECT_EQ(d->samples, 3);
  EXPECT_EQ(d->label_offsets, (std::vector<int64_t>{0, 2, 2, 3}));
  EXPECT_EQ(d->label_ids, (std::vector<int32_t>{1, 4, 0}));
  EXPECT_EQ(d->feature_offsets, (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_EQ(d->feature_ids, (std::vector<int32_t>{2, 7, 9, 0}));
  EXPECT_EQ(d->values, (std::vector<float>{0.15f, 0.5f, 3.f, 1.f}));

  // LSHTC's files put a space after each comma.
  auto lshtc = parse_xc("1 20 600\n545, 32,\t7 8:1 18:2\n", "mem");
  ASSERT_TRUE(lshtc) << describe(lshtc.error());
  EXPECT_EQ(lshtc->label_ids, (std::vector<int32_t>{7, 32, 545}));
  EXPECT_EQ(lshtc->feature_ids, (std::vector<int32_t>{8, 18}));
}

TEST_F(XcFormat, RefusesEachKindOfMalformedLine) {
  expect_refused("", "", "empty file");
  expect_refused("2 10\n", ", line 1", "three counts");
  expect_refused("2 ten 5\n", ", line 1", "features count 'ten'");
  expect_refused("0 10 5\n", ", line 1", "samples count is 0");
  expect_refused("2 100000000 5\n", ", line 1", "exceeds the limit");
  expect_refused("9000 10 5\n0 1:1\n", ", line 1", "cannot hold that many lines");
  expect_refused("2 10 5\n0 1:1\n\n", ", line 3", "empty line");
  expect_refused("2 10 5\n0 1:1\n  \t\n", ", line 3", "neither labels nor features");
  expect_refused("1 10 5\n1:1 2:1\n", ", line 2", "starts with a space");
  expect_refused("1 10 5\n0,,1 1:1\n", ", line 2", "empty label");
  expect_refused("1 10 5\n0, 1:1\n", ", line 2", "labels expected before the first feature");
  expect_refused("1 10 5\n0,\n", ", line 2", "empty label in '0,'");
  expect_refused("1 10 5\n0,x 1:1\n", ", line 2", "label 'x'");
  expect_refused("1 10 5\n-1 1:1\n", ", line 2", "label '-1'");
  expect_refused("1 10 5\n5 1:1\n", ", line 2", "label 5 is out of range [0, 5)");
  expect_refused("1 10 5\n2,2 1:1\n", ", line 2", "label 2 appears twice");
  expect_refused("1 10 5\n0 1\n", ", line 2", "is not `id:value`");
  expect_refused("1 10 5\n0 a:1\n", ", line 2", "feature id in 'a:1'");
  expect_refused("1 10 5\n0 10:1\n", ", line 2", "feature id 10 is out of range [0, 10)");
  expect_refused("1 10 5\n0 3:1 3:2\n", ", line 2", "feature id 3 appears twice");
  expect_refused("1 10 5\n0 3:\n", ", line 2", "not a number");
  expect_refused("1 10 5\n0 3:1x\n", ", line 2", "not a number");
  expect_refused("1 10 5\n0 3:nan\n", ", line 2", "not a finite float");
  expect_refused("1 10 5\n0 3:1e60\n", ", line 2", "not a finite float");
  expect_refused("1 10 5\n0 3:1\n1 4:1\n", ", line 3", "more sample lines than the 1");
  expect_refused("3 10 5\n0 3:1\n1 4:1\n", ", line 3", "ends after 2 sample line(s)");
  expect_refused("1 10 5\n0 3:\x01\xff\n", ", line 2", "'3:\\x01\\xff'");
}

TEST_F(XcFormat, RefusesALineOverTheCap) {
  const std::string text = "1 10 5\n0 " + std::string(xc_max_line_bytes, '1') + "\n";
  expect_refused(text, ", line 2", "longer than the limit");
}

TEST_F(XcFormat, MissingFileAndDirectoryNameThePath) {
  auto r = read_xc(dir_.file("absent.txt"));
  ASSERT_FALSE(r);
  EXPECT_NE(describe(r.error()).find("absent.txt"), std::string::npos);
  auto d = read_xc(dir_.path());
  ASSERT_FALSE(d);
  EXPECT_NE(describe(d.error()).find("directory"), std::string::npos) << describe(d.error());
}

TEST_F(XcFormat, WriterRefusesWhatTheReaderWould) {
  auto d = random_dataset(3, 20, 100, 10);
  auto bad = d;
  bad.feature_ids[0] = 100;
  EXPECT_FALSE(format_xc(bad));
  bad = d;
  bad.values.back() = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(format_xc(bad));
  bad = d;
  bad.label_offsets.pop_back();
  EXPECT_FALSE(format_xc(bad));
  bad = d;
  std::swap(bad.feature_ids[bad.feature_offsets[2]], bad.feature_ids[bad.feature_offsets[2] + 1]);
  EXPECT_FALSE(format_xc(bad));
  EXPECT_TRUE(format_xc(d));
}

TEST_F(XcFormat, LoadsADirectoryAndChecksTheHalvesAgree) {
  const std::string data = dir_.file("amazon");
  std::filesystem::create_directories(data);
  ASSERT_FALSE(write_xc(random_dataset(1, 40, 200, 30), data + "/train.txt"));
  ASSERT_FALSE(write_xc(random_dataset(2, 10, 200, 30), data + "/test.txt"));
  auto split = load_xc_dataset("xc:" + data, dir_.path());
  ASSERT_TRUE(split) << describe(split.error());
  EXPECT_EQ(split->train.samples, 40);
  EXPECT_EQ(split->test.samples, 10);

  ASSERT_FALSE(write_xc(random_dataset(2, 10, 200, 31), data + "/test.txt"));
  auto mismatch = load_xc_dataset("xc:" + data, dir_.path());
  ASSERT_FALSE(mismatch);
  EXPECT_NE(describe(mismatch.error()).find("but test.txt has 200 and 31"), std::string::npos)
      << describe(mismatch.error());
}

TEST_F(XcFormat, AnUnbuiltTaskSaysHowToBuildIt) {
  EXPECT_TRUE(is_xc_dataset("gcide-nextword"));
  EXPECT_TRUE(is_xc_dataset("spell-670k"));
  EXPECT_TRUE(is_xc_dataset("xc:/data/Amazon-670K"));
  EXPECT_FALSE(is_xc_dataset("fashion-mnist"));
  auto r = load_xc_dataset("spell-670k", dir_.path());
  ASSERT_FALSE(r);
  EXPECT_NE(describe(r.error()).find("python3 training/data/build_xc_datasets.py --out " + dir_.path() +
                                     " spell-670k"),
            std::string::npos)
      << describe(r.error());
  EXPECT_FALSE(load_xc_dataset("fashion-mnist", dir_.path()));
}

}  // namespace
