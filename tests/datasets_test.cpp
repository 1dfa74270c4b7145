// Tests for the dataset readers: the real Fashion-MNIST and fortunes data
// installed on the machine, and hostile files written to a temp dir.

#include "training/data/datasets.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fs = std::filesystem;
using namespace cleave;

namespace {

using bytes = std::vector<uint8_t>;

void put_be32(bytes& b, uint32_t v) {
  b.push_back(uint8_t(v >> 24));
  b.push_back(uint8_t(v >> 16));
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}

bytes idx_images(uint32_t n, uint32_t h, uint32_t w, size_t payload, uint32_t magic = 0x803) {
  bytes b;
  put_be32(b, magic);
  put_be32(b, n);
  put_be32(b, h);
  put_be32(b, w);
  for (size_t i = 0; i < payload; ++i) b.push_back(uint8_t((i * 7 + i / 13) & 0xff));
  return b;
}

bytes idx_labels(uint32_t n, size_t payload, uint32_t magic = 0x801) {
  bytes b;
  put_be32(b, magic);
  put_be32(b, n);
  for (size_t i = 0; i < payload; ++i) b.push_back(uint8_t(i % 10));
  return b;
}

bytes gzip_bytes(const bytes& in) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  bytes out(deflateBound(&z, in.size()) + 64);
  z.next_in = const_cast<uint8_t*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string message(const caf::error& err) { return describe(err); }

class Datasets : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir();
    if (tmpl.empty() || tmpl.back() != '/') tmpl += '/';
    tmpl += "cleave_datasets_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string write(const std::string& name, const bytes& b) {
    const std::string path = dir_ + "/" + name;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    EXPECT_TRUE(f.good());
    return path;
  }
  std::string write_text(const std::string& name, const std::string& s) {
    return write(name, bytes(s.begin(), s.end()));
  }

  // Expects failure and that the message names `path` and contains `word`.
  template <class T>
  void expect_error(const caf::expected<T>& r, const std::string& path, const std::string& word) {
    ASSERT_FALSE(r) << "expected an error mentioning '" << word << "'";
    const std::string msg = message(r.error());
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(word), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
  }

  std::string dir_;
};

// ---------------------------------------------------------------- real data

TEST(FashionMnist, LoadsRealDataQuickly) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ds = load_fashion_mnist(default_fashion_mnist_dir);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(ds) << describe(ds.error());
  std::printf("[ info ] fashion-mnist loaded in %.3f s\n", secs);
  EXPECT_LT(secs, 2.0);  // target is well under 1 s; slack for a shared machine

  for (const auto* set : {&ds->train, &ds->test}) {
    EXPECT_EQ(set->height, 28);
    EXPECT_EQ(set->width, 28);
    EXPECT_EQ(set->pixels.size(), size_t(set->count * 28 * 28));
    EXPECT_EQ(set->labels.size(), size_t(set->count));
    std::array<int64_t, 10> hist{};
    for (int32_t l : set->labels) {
      ASSERT_GE(l, 0);
      ASSERT_LT(l, 10);
      ++hist[l];
    }
    for (int64_t h : hist) EXPECT_EQ(h, set->count / 10);  // Fashion-MNIST is balanced
    EXPECT_GT(*std::max_element(set->pixels.begin(), set->pixels.end()), 200);
  }
  EXPECT_EQ(ds->train.count, 60000);
  EXPECT_EQ(ds->test.count, 10000);
}

TEST(FashionMnist, MissingDirNamesFile) {
  auto ds = load_fashion_mnist("/nonexistent/fmnist");
  ASSERT_FALSE(ds);
  const auto msg = describe(ds.error());
  EXPECT_NE(msg.find("cannot open /nonexistent/fmnist/train-images-idx3-ubyte.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- valid files

TEST_F(Datasets, ReadsSmallPairGzAndRaw) {
  const auto img = idx_images(5, 3, 4, 60);
  const auto lab = idx_labels(5, 5);
  for (bool gz : {false, true}) {
    const auto ip = write(gz ? "i.gz" : "i", gz ? gzip_bytes(img) : img);
    const auto lp = write(gz ? "l.gz" : "l", gz ? gzip_bytes(lab) : lab);
    auto r = read_idx_pair(ip, lp);
    ASSERT_TRUE(r) << describe(r.error());
    EXPECT_EQ(r->count, 5);
    EXPECT_EQ(r->height, 3);
    EXPECT_EQ(r->width, 4);
    EXPECT_EQ(r->pixels, bytes(img.begin() + 16, img.end()));
    EXPECT_EQ(r->labels, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  }
}

TEST_F(Datasets, AcceptsConcatenatedGzipMembers) {
  const auto img = idx_images(4, 2, 2, 16);
  bytes a(img.begin(), img.begin() + 10), b(img.begin() + 10, img.end());
  auto gz = gzip_bytes(a);
  const auto gz2 = gzip_bytes(b);
  gz.insert(gz.end(), gz2.begin(), gz2.end());
  auto r = read_idx_pair(write("i.gz", gz), write("l", idx_labels(4, 4)));
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(r->pixels, bytes(img.begin() + 16, img.end()));
}

// ---------------------------------------------------------------- hostile files

TEST_F(Datasets, WrongMagicImages) {
  const auto ip = write("i.gz", gzip_bytes(idx_labels(5, 5)));  // a label file where images belong
  const auto lp = write("l", idx_labels(5, 5));
  auto r = read_idx_pair(ip, lp);
  expect_error(r, ip, "wrong magic number 0x00000801 (expected 0x00000803 for an IDX image file)");
}

TEST_F(Datasets, WrongMagicLabels) {
  const auto ip = write("i", idx_images(5, 2, 2, 20));
  const auto lp = write("l", idx_images(5, 2, 2, 20));
  auto r = read_idx_pair(ip, lp);
  expect_error(r, lp, "wrong magic number 0x00000803 (expected 0x00000801");
}

TEST_F(Datasets, NotAnIdxFile) {
  const auto ip = write("i", bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  auto r = read_idx_pair(ip, write("l", idx_labels(1, 1)));
  expect_error(r, ip, "not a gzip or IDX file");
  const auto gp = write("t.gz", gzip_bytes(bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}));
  expect_error(read_idx_pair(gp, write("l2", idx_labels(1, 1))), gp, "not an IDX file");
}

TEST_F(Datasets, TruncatedPayloadRaw) {
  const auto ip = write("i", idx_images(10, 4, 4, 100));  // promises 160
  auto r = read_idx_pair(ip, write("l", idx_labels(10, 10)));
  expect_error(r, ip, "truncated: header promises 160 bytes of pixels, file holds 100");
}

TEST_F(Datasets, TruncatedPayloadGz) {
  const auto ip = write("i.gz", gzip_bytes(idx_images(10, 4, 4, 100)));
  auto r = read_idx_pair(ip, write("l", idx_labels(10, 10)));
  expect_error(r, ip, "truncated: header promises 160 bytes of pixels, file holds 100");
}

TEST_F(Datasets, TruncatedLabels) {
  const auto lp = write("l.gz", gzip_bytes(idx_labels(10, 7)));
  auto r = read_idx_pair(write("i", idx_images(10, 2, 2, 40)), lp);
  expect_error(r, lp, "truncated: header promises 10 bytes of labels, file holds 7");
}

TEST_F(Datasets, TruncatedHeader) {
  auto img = idx_images(10, 4, 4, 0);
  img.resize(9);
  const auto ip = write("i", img);
  expect_error(read_idx_pair(ip, write("l", idx_labels(10, 10))), ip, "truncated: IDX header needs 16 bytes");
  const auto gp = write("i.gz", gzip_bytes(img));
  expect_error(read_idx_pair(gp, write("l2", idx_labels(10, 10))), gp, "truncated: IDX header needs 16 bytes");
}

TEST_F(Datasets, TrailingBytesRaw) {
  const auto ip = write("i", idx_images(10, 4, 4, 163));
  expect_error(read_idx_pair(ip, write("l", idx_labels(10, 10))), ip, "trailing garbage");
  const auto lp = write("l2", idx_labels(10, 11));
  expect_error(read_idx_pair(write("i2", idx_images(10, 4, 4, 160)), lp), lp, "trailing garbage");
}

TEST_F(Datasets, TrailingBytesInsideGz) {
  const auto ip = write("i.gz", gzip_bytes(idx_images(10, 4, 4, 165)));
  auto r = read_idx_pair(ip, write("l", idx_labels(10, 10)));
  expect_error(r, ip, "trailing garbage: 5 extra bytes after the 160 bytes of pixels");
}

TEST_F(Datasets, GarbageAfterGzipStream) {
  auto gz = gzip_bytes(idx_images(10, 4, 4, 160));
  gz.insert(gz.end(), {'j', 'u', 'n', 'k'});
  const auto ip = write("i.gz", gz);
  expect_error(read_idx_pair(ip, write("l", idx_labels(10, 10))), ip, "trailing garbage after the end of the gzip stream");
}

TEST_F(Datasets, CountMismatch) {
  const auto ip = write("i.gz", gzip_bytes(idx_images(10, 2, 2, 40)));
  const auto lp = write("l.gz", gzip_bytes(idx_labels(9, 9)));
  auto r = read_idx_pair(ip, lp);
  ASSERT_FALSE(r);
  EXPECT_EQ(describe(r.error()), "image/label count mismatch: " + ip + " has 10 images, " + lp + " has 9 labels");
}

TEST_F(Datasets, LabelOutOfRange) {
  auto lab = idx_labels(6, 6);
  lab[8 + 3] = 10;
  const auto lp = write("l.gz", gzip_bytes(lab));
  auto r = read_idx_pair(write("i", idx_images(6, 2, 2, 24)), lp);
  expect_error(r, lp, "label 10 at index 3 is out of range");
  lab[8 + 3] = 255;
  const auto lp2 = write("l2", lab);
  expect_error(read_idx_pair(write("i2", idx_images(6, 2, 2, 24)), lp2), lp2, "label 255 at index 3");
}

TEST_F(Datasets, CorruptedGzip) {
  // Compressible pixel data (Huffman-coded blocks) and incompressible data
  // (stored blocks, caught only by the CRC): both must be errors.
  for (bool random : {false, true}) {
    bytes img = idx_images(200, 28, 28, 0);
    uint32_t s = 12345;
    for (size_t i = 0; i < 200 * 28 * 28; ++i) {
      s = s * 1103515245u + 12345u;
      img.push_back(random ? uint8_t(s >> 16) : uint8_t((i % 28) * 9 + (i / 784) % 3));
    }
    auto gz = gzip_bytes(img);
    ASSERT_GT(gz.size(), 200u);
    for (size_t k = 0; k < 8; ++k) gz[gz.size() / 2 + k] ^= 0x5a;
    const auto ip = write(random ? "r.gz" : "c.gz", gz);
    auto r = read_idx_pair(ip, write(random ? "rl" : "cl", idx_labels(200, 200)));
    expect_error(r, ip, "corrupt gzip file");
  }
}

TEST_F(Datasets, CorruptedGzipTrailerCrc) {
  auto gz = gzip_bytes(idx_images(10, 4, 4, 160));
  gz[gz.size() - 6] ^= 0xff;  // CRC32 field
  const auto ip = write("i.gz", gz);
  expect_error(read_idx_pair(ip, write("l", idx_labels(10, 10))), ip, "corrupt gzip file");
}

TEST_F(Datasets, TruncatedGzipStream) {
  bytes img = idx_images(100, 28, 28, 100 * 28 * 28);
  auto gz = gzip_bytes(img);
  gz.resize(gz.size() / 2);
  const auto ip = write("i.gz", gz);
  expect_error(read_idx_pair(ip, write("l", idx_labels(100, 100))), ip, "truncated");
  // Cut only the 8-byte trailer: the data is all there but unverified.
  auto gz2 = gzip_bytes(img);
  gz2.resize(gz2.size() - 4);
  const auto ip2 = write("i2.gz", gz2);
  expect_error(read_idx_pair(ip2, write("l2", idx_labels(100, 100))), ip2, "corrupt gzip file");
}

TEST_F(Datasets, MissingFile) {
  const auto ip = dir_ + "/nope.gz";
  auto r = read_idx_pair(ip, write("l", idx_labels(1, 1)));
  ASSERT_FALSE(r);
  EXPECT_EQ(describe(r.error()), "cannot open " + ip + ": No such file or directory");
  const auto lp = dir_ + "/nolabels";
  expect_error(read_idx_pair(write("i", idx_images(1, 1, 1, 1)), lp), lp, "No such file or directory");
}

TEST_F(Datasets, DirectoryInsteadOfFile) {
  fs::create_directories(dir_ + "/sub");
  expect_error(read_idx_pair(dir_ + "/sub", write("l", idx_labels(1, 1))), dir_ + "/sub", "Is a directory");
}

TEST_F(Datasets, EmptyFile) {
  const auto ip = write("i", bytes{});
  expect_error(read_idx_pair(ip, write("l", idx_labels(1, 1))), ip, "empty file");
  const auto gp = write("e.gz", gzip_bytes(bytes{}));  // valid gzip of nothing
  expect_error(read_idx_pair(gp, write("l2", idx_labels(1, 1))), gp, "truncated");
}

TEST_F(Datasets, AbsurdDimsFailFast) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto ip = write("i", idx_images(0xFFFFFFFFu, 28, 28, 64));
  expect_error(read_idx_pair(ip, write("l", idx_labels(1, 1))), ip, "image count 4294967295 exceeds the limit");
  const auto gp = write("i.gz", gzip_bytes(idx_images(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 64)));
  expect_error(read_idx_pair(gp, write("l2", idx_labels(1, 1))), gp, "exceeds the limit");
  const auto wp = write("w", idx_images(10, 28, 5000, 64));
  expect_error(read_idx_pair(wp, write("l3", idx_labels(10, 10))), wp, "width 5000 exceeds the limit of 4096");
  const auto zp = write("z", idx_images(10, 0, 28, 0));
  expect_error(read_idx_pair(zp, write("l4", idx_labels(10, 10))), zp, "height is 0");
  const auto lp = write("l5", idx_labels(0xFFFFFFFFu, 4));
  expect_error(read_idx_pair(write("i5", idx_images(1, 1, 1, 1)), lp), lp, "label count 4294967295 exceeds");
  // Each dimension within its cap but the product over 1 GiB.
  const auto pp = write("p", idx_images(10'000'000, 4096, 4096, 64));
  expect_error(read_idx_pair(pp, write("l6", idx_labels(10'000'000, 4))), pp, "1 GiB limit");
  // Under every cap (~750 MB) but far more than a tiny gzip file can hold:
  // rejected before allocating.
  const auto tp = write("t.gz", gzip_bytes(idx_images(1'000'000, 28, 28, 64)));
  expect_error(read_idx_pair(tp, write("l7.gz", gzip_bytes(idx_labels(1'000'000, 4)))), tp, "truncated");
  // Same claim, uncompressed: the file size gives it away.
  const auto tr = write("t", idx_images(1'000'000, 28, 28, 64));
  expect_error(read_idx_pair(tr, write("l8", idx_labels(1'000'000, 4))), tr, "truncated");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 0.5);
}

// ---------------------------------------------------------------- fortunes

TEST(Fortunes, RealCorpusDeterministicSplit) {
  auto a = load_fortunes(default_fortunes_dir);
  ASSERT_TRUE(a) << describe(a.error());
  auto b = load_fortunes(default_fortunes_dir);
  ASSERT_TRUE(b) << describe(b.error());
  EXPECT_EQ(a->train, b->train);
  EXPECT_EQ(a->val, b->val);
  EXPECT_EQ(a->files, b->files);
  std::printf("[ info ] fortunes: %zu files, train %zu bytes, val %zu bytes\n", a->files.size(), a->train.size(),
              a->val.size());
  EXPECT_FALSE(a->val.empty());
  EXPECT_GT(a->train.size(), 5 * a->val.size());
  EXPECT_LT(a->train.size(), 15 * a->val.size());
  EXPECT_TRUE(std::is_sorted(a->files.begin(), a->files.end()));
  for (const auto& f : a->files) {
    EXPECT_FALSE(f.size() >= 4 && f.compare(f.size() - 4, 4, ".dat") == 0) << f;
    EXPECT_FALSE(f.size() >= 3 && f.compare(f.size() - 3, 3, ".u8") == 0) << f;
    EXPECT_EQ(f.find("/off/"), std::string::npos) << f;
  }
  for (const auto* split : {&a->train, &a->val}) {
    const std::string s(split->begin(), split->end());
    EXPECT_EQ(s.find("\n%\n"), std::string::npos);
    EXPECT_NE(s.substr(0, 2), "%\n");
  }
}

TEST_F(Datasets, FortunesExactSplit) {
  // 23 fortunes of ~600 bytes over two files (plus files that must be skipped).
  auto body = [](int i) {
    std::string s = "Fortune " + std::to_string(i) + "\n";
    while (s.size() < 600) s += "line of fortune " + std::to_string(i) + " text\n";
    return s;
  };
  std::string a, b;
  for (int i = 0; i < 12; ++i) a += body(i) + "%\n";
  for (int i = 12; i < 23; ++i) b += (i > 12 ? "%\n" : "") + body(i);  // no trailing "%"
  b += "%\n   \n%\n";                                                    // blank fortune: ignored
  write_text("fort/alpha", a);
  write_text("fort/beta", b);
  write_text("fort/alpha.dat", std::string(100, '\x01'));
  write_text("fort/alpha.u8", a);
  write_text("fort/off/rot", std::string(20000, 'x'));
  write_text("fort/.hidden", std::string(20000, 'h'));
  fs::create_symlink(dir_ + "/fort/alpha", dir_ + "/fort/gamma");          // followed
  fs::create_symlink(dir_ + "/fort/missing", dir_ + "/fort/broken");       // skipped

  auto r = load_fortunes(dir_ + "/fort");
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(r->files, (std::vector<std::string>{dir_ + "/fort/alpha", dir_ + "/fort/beta", dir_ + "/fort/gamma"}));
  // Fortunes in order: alpha 0..11, beta 12..22, gamma 0..11 again (indices 23..34).
  std::vector<std::string> all;
  for (int i = 0; i < 23; ++i) all.push_back(body(i));
  for (int i = 0; i < 12; ++i) all.push_back(body(i));
  std::string train, val;
  for (size_t i = 0; i < all.size(); ++i) {
    auto& dst = i % 10 == 9 ? val : train;
    if (!dst.empty()) dst += '\n';
    dst += all[i];
  }
  EXPECT_EQ(std::string(r->train.begin(), r->train.end()), train);
  EXPECT_EQ(std::string(r->val.begin(), r->val.end()), val);
  EXPECT_EQ(std::string(r->val.begin(), r->val.end()), body(9) + "\n" + body(19) + "\n" + body(6));
}

TEST_F(Datasets, FortunesMissingDir) {
  auto r = load_fortunes(dir_ + "/nope");
  expect_error(r, dir_ + "/nope", "No such file or directory");
  const auto f = write_text("plain", "x");
  expect_error(load_fortunes(f), f, "Not a directory");
}

TEST_F(Datasets, FortunesNoUsableFiles) {
  write_text("fort/a.dat", "x");
  write_text("fort/a.u8", std::string(20000, 'y'));
  write_text("fort/off/z", std::string(20000, 'z'));
  expect_error(load_fortunes(dir_ + "/fort"), dir_ + "/fort", "no fortune files");
}

TEST_F(Datasets, FortunesTinyCorpus) {
  std::string s;
  for (int i = 0; i < 30; ++i) s += "short one " + std::to_string(i) + "\n%\n";
  write_text("fort/a", s);
  expect_error(load_fortunes(dir_ + "/fort"), dir_ + "/fort", "too small");
}

TEST_F(Datasets, FortunesEmptyValSplit) {
  std::string s;
  for (int i = 0; i < 9; ++i) s += std::string(2000, char('a' + i)) + "\n%\n";
  write_text("fort/a", s);
  expect_error(load_fortunes(dir_ + "/fort"), dir_ + "/fort", "validation split is empty");
}

}  // namespace
