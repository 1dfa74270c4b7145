#include "training/data/datasets.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include <zlib.h>

#include "training/data/regular_file.hpp"

namespace cleave {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t max_count = 10'000'000;
constexpr uint64_t max_side = 4096;
constexpr uint64_t max_payload = uint64_t{1} << 30;          // 1 GiB
constexpr uint64_t max_fortune_bytes = uint64_t{256} << 20;  // 256 MiB
constexpr size_t min_corpus_bytes = 10 * 1024;
// Deflate cannot expand more than 1032:1, so a gzip file of n bytes holds at
// most about 1032 * n bytes; anything promising more is truncated, and we can
// say so before allocating.
constexpr uint64_t deflate_max_ratio = 1032;
constexpr size_t in_chunk = size_t{1} << 18;  // compressed bytes per fread

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string hex_bytes(const uint8_t* p, size_t n) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    if (i) out += ' ';
    out += buf;
  }
  return out;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// A sequential byte stream over a file that is either raw or gzip (possibly
// several concatenated members). read() returns fewer bytes than asked only at
// the clean end of the data; a corrupt or truncated gzip stream, trailing
// non-gzip bytes after a member, or an I/O error is an error.
class byte_source {
 public:
  static caf::expected<std::unique_ptr<byte_source>> open(const std::string& path) {
    auto opened = open_regular(path);
    if (!opened) return std::move(opened.error());
    std::unique_ptr<byte_source> src{new byte_source(path, std::move(opened->first), opened->second)};
    if (auto err = src->detect()) return err;
    return src;
  }

  ~byte_source() {
    if (zinit_) inflateEnd(&z_);
  }
  byte_source(const byte_source&) = delete;
  byte_source& operator=(const byte_source&) = delete;

  bool gzip() const { return gzip_; }
  uint64_t file_size() const { return file_size_; }
  const std::string& path() const { return path_; }

  // Reads up to n bytes into dst, storing the count in got.
  caf::error read(uint8_t* dst, size_t n, size_t& got) {
    got = 0;
    if (!gzip_) return read_raw(dst, n, got);
    return read_gzip(dst, n, got);
  }

  // Reads exactly n bytes unless the data ends first (got < n then).
  caf::error read_full(uint8_t* dst, size_t n, size_t& got) {
    got = 0;
    while (got < n) {
      size_t step = 0;
      if (auto err = read(dst + got, n - got, step)) return err;
      if (step == 0) break;
      got += step;
    }
    return {};
  }

  // Drains the rest of the stream, counting bytes up to limit (further bytes
  // are not read). Also verifies the gzip trailer(s) when nothing remains.
  caf::error drain(uint64_t limit, uint64_t& extra) {
    extra = 0;
    std::vector<uint8_t> scratch(size_t{1} << 16);
    while (extra <= limit) {
      size_t step = 0;
      if (auto err = read(scratch.data(), scratch.size(), step)) return err;
      if (step == 0) break;
      extra += step;
    }
    return {};
  }

  caf::error problem(const std::string& what) const { return fail(path_ + ": " + what); }

 private:
  enum class zstate { in_member, between_members, done };

  byte_source(std::string path, file_ptr f, uint64_t size)
      : path_(std::move(path)), f_(std::move(f)), file_size_(size) {}

  caf::error detect() {
    // Peek at the first two bytes; they are handed back through the buffer.
    inbuf_.resize(in_chunk);
    if (auto err = refill()) return err;
    if (avail_ == 0) return problem("empty file (not a gzip or IDX file)");
    if (avail_ >= 2 && inbuf_[0] == 0x1f && inbuf_[1] == 0x8b) {
      gzip_ = true;
      std::memset(&z_, 0, sizeof z_);
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) return problem("cannot initialise zlib");
      zinit_ = true;
      z_.next_in = inbuf_.data();
      z_.avail_in = static_cast<uInt>(avail_);
    }
    return {};
  }

  caf::error refill() {
    pos_ = 0;
    avail_ = std::fread(inbuf_.data(), 1, inbuf_.size(), f_.get());
    if (avail_ < inbuf_.size()) {
      if (std::ferror(f_.get())) return problem(std::string("read error: ") + std::strerror(errno ? errno : EIO));
      eof_ = true;
    }
    return {};
  }

  caf::error read_raw(uint8_t* dst, size_t n, size_t& got) {
    // Serve what detect() buffered first, then read straight into dst.
    if (pos_ < avail_) {
      size_t k = std::min(n, avail_ - pos_);
      std::memcpy(dst, inbuf_.data() + pos_, k);
      pos_ += k;
      got = k;
      return {};
    }
    if (eof_) return {};
    size_t k = std::fread(dst, 1, n, f_.get());
    if (k < n) {
      if (std::ferror(f_.get())) return problem(std::string("read error: ") + std::strerror(errno ? errno : EIO));
      eof_ = true;
    }
    got = k;
    return {};
  }

  caf::error read_gzip(uint8_t* dst, size_t n, size_t& got) {
    while (got < n && state_ != zstate::done) {
      if (z_.avail_in == 0 && !eof_) {
        if (auto err = refill()) return err;
        z_.next_in = inbuf_.data();
        z_.avail_in = static_cast<uInt>(avail_);
      }
      if (state_ == zstate::between_members) {
        if (z_.avail_in == 0) {
          if (eof_) state_ = zstate::done;
          continue;
        }
        // Another gzip member may follow; anything else is garbage.
        if (z_.next_in[0] != 0x1f)
          return problem("corrupt gzip file: trailing garbage after the end of the gzip stream");
        if (inflateReset(&z_) != Z_OK) return problem("corrupt gzip file: cannot reset zlib");
        state_ = zstate::in_member;
      }
      const size_t want = std::min<size_t>(n - got, size_t{1} << 30);
      z_.next_out = dst + got;
      z_.avail_out = static_cast<uInt>(want);
      const int ret = inflate(&z_, Z_NO_FLUSH);
      got += want - z_.avail_out;
      switch (ret) {
        case Z_OK:
          break;
        case Z_STREAM_END:
          state_ = zstate::between_members;
          break;
        case Z_BUF_ERROR:
          if (z_.avail_in == 0 && eof_)
            return problem("corrupt gzip file: compressed stream is truncated (unexpected end of file)");
          break;  // no progress possible this round; loop refills
        default:
          return problem(std::string("corrupt gzip file: ") + (z_.msg ? z_.msg : "inflate failed (code " + std::to_string(ret) + ")"));
      }
    }
    return {};
  }

  std::string path_;
  file_ptr f_;
  uint64_t file_size_ = 0;
  std::vector<uint8_t> inbuf_;
  size_t pos_ = 0, avail_ = 0;
  bool eof_ = false;
  bool gzip_ = false;
  bool zinit_ = false;
  z_stream z_{};
  zstate state_ = zstate::in_member;
};

bool is_idx_type(uint8_t t) {
  return t == 0x08 || t == 0x09 || t == 0x0B || t == 0x0C || t == 0x0D || t == 0x0E;
}

// An opened IDX file whose header has been read and validated; the payload
// (payload_bytes of unsigned bytes) is next in the stream.
struct idx_file {
  std::unique_ptr<byte_source> src;
  std::vector<uint32_t> dims;
  uint64_t header_bytes = 0;
  uint64_t payload_bytes = 0;
};

// kind is "image" (magic 0x803, dims count,height,width) or "label" (0x801, dims count).
caf::expected<idx_file> open_idx(const std::string& path, uint32_t ndims, const char* kind) {
  const uint32_t expected_magic = 0x00000800u | ndims;
  auto opened = byte_source::open(path);
  if (!opened) return std::move(opened.error());
  idx_file out;
  out.src = std::move(*opened);
  auto& src = *out.src;

  uint8_t head[4 + 4 * 3];
  size_t got = 0;
  if (auto err = src.read_full(head, 4, got)) return err;
  if (got < 4) {
    if (!src.gzip() && !(got >= 2 && head[0] == 0 && head[1] == 0))
      return src.problem("not a gzip or IDX file");
    return src.problem("truncated: IDX header needs " + std::to_string(4 + 4 * ndims) +
                       " bytes, file holds " + std::to_string(got));
  }
  const uint32_t magic = be32(head);
  if (magic != expected_magic) {
    if (head[0] == 0 && head[1] == 0 && is_idx_type(head[2]))
      return src.problem("wrong magic number " + hex32(magic) + " (expected " + hex32(expected_magic) +
                         " for an IDX " + kind + " file)");
    if (src.gzip())
      return src.problem("not an IDX file: gzip content starts with bytes " + hex_bytes(head, 4));
    return src.problem("not a gzip or IDX file (starts with bytes " + hex_bytes(head, 4) + ")");
  }
  if (auto err = src.read_full(head + 4, 4 * ndims, got)) return err;
  if (got < 4 * ndims)
    return src.problem("truncated: IDX header needs " + std::to_string(4 + 4 * ndims) +
                       " bytes, file holds " + std::to_string(4 + got));
  out.header_bytes = 4 + 4 * ndims;

  static const char* const image_names[] = {"image count", "height", "width"};
  uint64_t product = 1;
  for (uint32_t i = 0; i < ndims; ++i) {
    const uint32_t d = be32(head + 4 + 4 * i);
    const char* name = ndims == 1 ? "label count" : image_names[i];
    if (d == 0) return src.problem(std::string("invalid header: ") + name + " is 0");
    const uint64_t cap = i == 0 ? max_count : max_side;
    if (d > cap)
      return src.problem(std::string("invalid header: ") + name + " " + std::to_string(d) + " exceeds the limit of " +
                         std::to_string(cap));
    out.dims.push_back(d);
    product *= d;  // at most 1e7 * 4096 * 4096 < 2^64
  }
  if (product > max_payload)
    return src.problem("invalid header: dimensions promise " + std::to_string(product) +
                       " bytes, more than the 1 GiB limit");
  out.payload_bytes = product;

  // Cheap size checks that need no allocation.
  const char* what = ndims == 1 ? "labels" : "pixels";
  if (!src.gzip()) {
    const uint64_t have = src.file_size() > out.header_bytes ? src.file_size() - out.header_bytes : 0;
    if (have < product)
      return src.problem("truncated: header promises " + std::to_string(product) + " bytes of " + what +
                         ", file holds " + std::to_string(have));
    if (have > product)
      return src.problem("trailing garbage: header promises " + std::to_string(product) + " bytes of " + what +
                         ", file holds " + std::to_string(have) + " (" + std::to_string(have - product) +
                         " extra bytes)");
  } else {
    const uint64_t bound = src.file_size() * deflate_max_ratio + 4096;
    if (out.header_bytes + product > bound)
      return src.problem("truncated: header promises " + std::to_string(product) + " bytes of " + what +
                         ", but a gzip file of " + std::to_string(src.file_size()) +
                         " bytes cannot decompress to more than " + std::to_string(bound));
  }
  return out;
}

// Reads the payload announced by the header into dst (sized payload_bytes),
// then insists the stream ends right there (and that gzip trailers check out).
caf::error read_idx_payload(idx_file& f, uint8_t* dst) {
  auto& src = *f.src;
  const char* what = f.dims.size() == 1 ? "labels" : "pixels";
  size_t got = 0;
  if (auto err = src.read_full(dst, f.payload_bytes, got)) return err;
  if (got < f.payload_bytes)
    return src.problem("truncated: header promises " + std::to_string(f.payload_bytes) + " bytes of " + what +
                       ", file holds " + std::to_string(got));
  uint64_t extra = 0;
  const uint64_t limit = uint64_t{64} << 20;
  if (auto err = src.drain(limit, extra)) return err;
  if (extra > 0)
    return src.problem("trailing garbage: " + std::string(extra > limit ? "more than " : "") +
                       std::to_string(extra > limit ? limit : extra) + " extra bytes after the " +
                       std::to_string(f.payload_bytes) + " bytes of " + what + " the header promises");
  return {};
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Reads a whole regular file, adding to total and failing past the cap.
caf::error slurp(const std::string& path, std::string& out, uint64_t& total) {
  auto opened = open_regular(path);
  if (!opened) return std::move(opened.error());
  std::FILE* f = opened->first.get();
  if (total + opened->second > max_fortune_bytes)
    return fail(path + ": fortune corpus exceeds the 256 MiB limit");
  out.clear();
  char buf[1 << 16];
  for (;;) {
    const size_t k = std::fread(buf, 1, sizeof buf, f);
    if (k > 0) {
      total += k;
      if (total > max_fortune_bytes) return fail(path + ": fortune corpus exceeds the 256 MiB limit");
      out.append(buf, k);
    }
    if (k < sizeof buf) {
      if (std::ferror(f)) return fail(path + ": read error: " + std::strerror(errno ? errno : EIO));
      break;
    }
  }
  return {};
}

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; });
}

}  // namespace

caf::expected<image_set> read_idx_pair(const std::string& images_path, const std::string& labels_path) {
  auto images = open_idx(images_path, 3, "image");
  if (!images) return std::move(images.error());
  auto labels = open_idx(labels_path, 1, "label");
  if (!labels) return std::move(labels.error());
  if (images->dims[0] != labels->dims[0])
    return fail("image/label count mismatch: " + images_path + " has " + std::to_string(images->dims[0]) +
                " images, " + labels_path + " has " + std::to_string(labels->dims[0]) + " labels");

  image_set out;
  out.count = images->dims[0];
  out.height = images->dims[1];
  out.width = images->dims[2];
  out.pixels.resize(images->payload_bytes);
  if (auto err = read_idx_payload(*images, out.pixels.data())) return err;

  std::vector<uint8_t> raw(labels->payload_bytes);
  if (auto err = read_idx_payload(*labels, raw.data())) return err;
  out.labels.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= 10)
      return fail(labels_path + ": label " + std::to_string(raw[i]) + " at index " + std::to_string(i) +
                  " is out of range [0, 10)");
    out.labels[i] = raw[i];
  }
  return out;
}

caf::expected<fashion_mnist> load_fashion_mnist(const std::string& dir) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  fashion_mnist out;
  auto train = read_idx_pair(base + "train-images-idx3-ubyte.gz", base + "train-labels-idx1-ubyte.gz");
  if (!train) return std::move(train.error());
  auto test = read_idx_pair(base + "t10k-images-idx3-ubyte.gz", base + "t10k-labels-idx1-ubyte.gz");
  if (!test) return std::move(test.error());
  if (train->height != test->height || train->width != test->width)
    return fail(dir + ": train images are " + std::to_string(train->height) + "x" + std::to_string(train->width) +
                " but test images are " + std::to_string(test->height) + "x" + std::to_string(test->width));
  out.train = std::move(*train);
  out.test = std::move(*test);
  return out;
}

caf::expected<text_corpus> load_fortunes(const std::string& dir) {
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (ec || !fs::exists(st)) {
    const int e = ec ? ec.value() : ENOENT;
    return fail("cannot open fortune directory " + dir + ": " + std::strerror(e));
  }
  if (!fs::is_directory(st)) return fail("cannot open fortune directory " + dir + ": " + std::strerror(ENOTDIR));

  std::vector<std::pair<std::string, std::string>> entries;  // (name, path)
  fs::directory_iterator it(dir, ec), end;
  if (ec) return fail("cannot open fortune directory " + dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return fail("cannot list fortune directory " + dir + ": " + ec.message());
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.' || ends_with(name, ".dat") || ends_with(name, ".u8")) continue;
    std::error_code sec;
    const auto fst = fs::status(it->path(), sec);  // follows symlinks
    if (sec || !fs::is_regular_file(fst)) continue;  // subdirectories, broken links, devices
    entries.emplace_back(name, it->path().string());
  }
  if (ec) return fail("cannot list fortune directory " + dir + ": " + ec.message());
  std::sort(entries.begin(), entries.end());
  if (entries.empty())
    return fail(dir + ": no fortune files (regular files other than *.dat and *.u8)");

  text_corpus out;
  uint64_t total = 0;
  uint64_t index = 0;
  std::string content, fortune;
  auto emit = [&] {
    if (!blank(fortune)) {
      auto& dst = (index % 10 == 9) ? out.val : out.train;
      if (!dst.empty()) dst.push_back('\n');
      dst.insert(dst.end(), fortune.begin(), fortune.end());
      ++index;
    }
    fortune.clear();
  };
  for (const auto& [name, path] : entries) {
    if (auto err = slurp(path, content, total)) return err;
    out.files.push_back(path);
    size_t pos = 0;
    while (pos < content.size()) {
      size_t nl = content.find('\n', pos);
      const size_t line_end = nl == std::string::npos ? content.size() : nl;
      size_t len = line_end - pos;
      if (len > 0 && content[pos + len - 1] == '\r') --len;
      if (len == 1 && content[pos] == '%') {
        emit();
      } else {
        fortune.append(content, pos, line_end - pos);
        fortune.push_back('\n');
      }
      pos = nl == std::string::npos ? content.size() : nl + 1;
    }
    emit();  // a file's last fortune need not be followed by "%"
  }
  if (out.train.size() + out.val.size() < min_corpus_bytes)
    return fail(dir + ": fortune corpus too small: " + std::to_string(out.train.size() + out.val.size()) +
                " bytes in " + std::to_string(index) + " fortunes (need at least " +
                std::to_string(min_corpus_bytes) + ")");
  if (out.val.empty())
    return fail(dir + ": validation split is empty: only " + std::to_string(index) +
                " fortunes (every 10th goes to validation)");
  return out;
}

}  // namespace cleave
