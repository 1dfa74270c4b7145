#include "schema/shard_checkpoint_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "schema/atomic_file.hpp"
#include "schema/byte_io.hpp"
#include "schema/errors.hpp"

namespace fs = std::filesystem;

namespace cleave {

namespace {

constexpr char magic[8] = {'C', 'L', 'V', 'S', 'H', 'C', 'K', '\0'};
constexpr uint32_t format_version = 1;
constexpr size_t header_bytes = 48;
constexpr size_t crc_offset = 20;
constexpr size_t max_file_name = 255;
constexpr size_t request_header_bytes = 4 + 4 + 8 + 8;
constexpr size_t geometry_bytes = 1 + 4 * 8;

uint32_t crc_step(uint32_t crc, const char* data, size_t len) {
  return static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(data), len));
}

// The checksum covers the header but its own field, then the payload.
uint32_t checksum_of(const std::vector<std::string_view>& parts) {
  uint32_t crc = static_cast<uint32_t>(crc32_z(0, nullptr, 0));
  const std::string_view head = parts.front();
  crc = crc_step(crc, head.data(), crc_offset);
  crc = crc_step(crc, head.data() + crc_offset + 4, head.size() - crc_offset - 4);
  for (size_t i = 1; i < parts.size(); ++i) crc = crc_step(crc, parts[i].data(), parts[i].size());
  return crc;
}

std::string_view floats_of(const tensor& t) {
  return {reinterpret_cast<const char*>(t.data()), static_cast<size_t>(t.size()) * sizeof(float)};
}

void put_header(byte_writer& w, const shard_checkpoint_header& h) {
  w.put(h.shard);
  w.put(h.shards);
  w.put(h.step);
  w.put(h.set_id);
}

bool get_header(byte_reader& r, shard_checkpoint_header& h) {
  return r.get(h.shard) && r.get(h.shards) && r.get(h.step) && r.get(h.set_id);
}

caf::error check_header(const shard_checkpoint_header& h, const std::string& name) {
  if (h.shards == 0 || h.shards > max_checkpoint_shards || h.shard >= h.shards)
    return fail(name + ": shard " + std::to_string(h.shard) + " of " + std::to_string(h.shards)
                + " is out of range (1 to " + std::to_string(max_checkpoint_shards) + " shards)");
  return caf::none;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::string shard_checkpoint_name(uint64_t step, uint32_t shard, uint32_t shards) {
  char name[80];
  std::snprintf(name, sizeof(name), "shard-%010llu-%02u-of-%02u.clvshard", static_cast<unsigned long long>(step),
                shard, shards);
  return name;
}

caf::expected<shard_file_ref> write_shard_checkpoint(const std::string& dir, const shard_checkpoint_header& h,
                                                     const std::vector<shard_checkpoint_slice>& slices, int keep) {
  if (auto err = check_header(h, "shard checkpoint")) return err;
  // Fixed fields in one buffer; the tensors' floats are written from where they are.
  std::vector<char> fixed(header_bytes + 4 + slices.size() * (2 + 4 * 8 + 3 * 16));
  byte_writer w(fixed.data());
  std::vector<std::string_view> parts;
  w.raw(magic, 8);
  w.put(format_version);
  w.put(h.shard);
  w.put(h.shards);
  w.put(uint32_t{0});  // the checksum, filled in below
  w.put(h.step);
  w.put(h.set_id);
  w.put(uint64_t{0});  // the payload length, filled in below
  parts.emplace_back(fixed.data(), header_bytes);
  // Fixed bytes accumulate from `pending` and become one part before each tensor's floats.
  const char* pending = w.position();
  auto flush = [&] {
    parts.emplace_back(pending, static_cast<size_t>(w.position() - pending));
    pending = w.position();
  };
  w.put(static_cast<uint32_t>(slices.size()));
  for (const auto& s : slices) {
    w.put(s.axis);
    w.put(static_cast<uint8_t>(s.decay));
    w.put(s.full_rows);
    w.put(s.full_cols);
    w.put(s.begin);
    w.put(s.end);
    for (const tensor* t : {s.value, s.adam_m, s.adam_v}) {
      w.put(t->rows());
      w.put(t->cols());
      flush();
      parts.push_back(floats_of(*t));
    }
  }
  flush();
  uint64_t payload = 0;
  for (size_t i = 1; i < parts.size(); ++i) payload += parts[i].size();
  std::memcpy(fixed.data() + 40, &payload, 8);
  const uint32_t crc = checksum_of(parts);
  std::memcpy(fixed.data() + crc_offset, &crc, 4);

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("cannot create checkpoint directory " + dir + ": " + ec.message());
  shard_file_ref out{shard_checkpoint_name(h.step, h.shard, h.shards), crc, header_bytes + payload};
  if (auto err = write_file_atomically((fs::path(dir) / out.name).string(), parts, "shard checkpoint")) return err;

  // This shard's files, newest step first; the newest `keep` stay.
  char pattern[64];
  std::snprintf(pattern, sizeof(pattern), R"(shard-(\d{10})-%02u-of-%02u\.clvshard)", h.shard, h.shards);
  const std::regex mine(pattern);
  std::vector<std::pair<std::string, fs::path>> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    std::smatch m;
    if (std::regex_match(n, m, mine)) found.emplace_back(m[1].str(), it->path());
    else if (n.rfind(".shard-", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0
             && n.find(out.name.substr(16)) != std::string::npos)  // "-II-of-CC.clvshard": this shard's
      fs::remove(it->path(), ec);
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = static_cast<size_t>(std::max(keep, 1)); i < found.size(); ++i) fs::remove(found[i].second, ec);
  return out;
}

caf::expected<shard_checkpoint_data> read_shard_checkpoint(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open shard checkpoint " + path + ": " + errno_text());
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_on_exit{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail("cannot stat shard checkpoint " + path + ": " + errno_text());
  // The file's real size, not anything it claims, sizes the buffer.
  std::vector<char> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(path + ": read failed: " + (n == 0 ? std::string("file shrank") : errno_text()));
    got += static_cast<size_t>(n);
  }
  auto out = read_shard_checkpoint_bytes(bytes.data(), bytes.size(), path);
  if (out) out->file.name = fs::path(path).filename().string();
  return out;
}

caf::expected<shard_checkpoint_data> read_shard_checkpoint_bytes(const char* data, size_t size,
                                                                 const std::string& name) {
  if (size < header_bytes)
    return fail(name + ": truncated shard checkpoint (" + std::to_string(size) + " bytes, smaller than its header)");
  if (std::memcmp(data, magic, 8) != 0) return fail(name + ": not a Cleave shard checkpoint (bad magic)");
  byte_reader r(data + 8, header_bytes - 8);
  uint32_t version = 0, crc = 0;
  shard_checkpoint_data out;
  uint64_t payload = 0;
  r.get(version);
  r.get(out.header.shard);
  r.get(out.header.shards);
  r.get(crc);
  r.get(out.header.step);
  r.get(out.header.set_id);
  r.get(payload);
  if (version != format_version)
    return fail(name + ": shard checkpoint format version " + std::to_string(version) + ", this build reads version "
                + std::to_string(format_version));
  if (payload != size - header_bytes)
    return fail(name + ": truncated or padded shard checkpoint: header promises " + std::to_string(payload)
                + " payload bytes, file holds " + std::to_string(size - header_bytes));
  if (checksum_of({std::string_view(data, header_bytes), std::string_view(data + header_bytes, payload)}) != crc)
    return fail(name + ": checksum mismatch (the file is corrupt)");
  if (auto err = check_header(out.header, name)) return err;
  auto slices = decode_shard_attach(data + header_bytes, payload);
  if (!slices) return fail(name + ": " + describe(slices.error()));
  out.slices = std::move(*slices);
  out.file = {name, crc, size};
  return out;
}

std::vector<char> encode(const shard_checkpoint_header& h) {
  std::vector<char> out(request_header_bytes);
  byte_writer w(out.data());
  put_header(w, h);
  return out;
}

caf::expected<shard_checkpoint_header> decode_shard_checkpoint_request(const char* data, size_t size) {
  byte_reader r(data, size);
  shard_checkpoint_header h;
  if (!get_header(r, h) || r.left() != 0) return fail("shard checkpoint frame: not " + std::to_string(request_header_bytes) + " bytes");
  if (auto err = check_header(h, "shard checkpoint frame")) return err;
  return h;
}

std::vector<char> encode(const shard_file_ref& f) {
  std::vector<char> out(4 + 8 + 2 + f.name.size());
  byte_writer w(out.data());
  w.put(f.checksum);
  w.put(f.bytes);
  w.text(f.name);
  return out;
}

namespace {

// A file name a peer sent: a plain name in the folder, never a path.
bool plain_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos && n.find('\0') == std::string::npos;
}

}  // namespace

caf::expected<shard_file_ref> decode_shard_file_ref(const char* data, size_t size) {
  byte_reader r(data, size);
  shard_file_ref f;
  if (!r.get(f.checksum) || !r.get(f.bytes) || !r.text(f.name, max_file_name) || r.left() != 0 || !plain_name(f.name))
    return fail("shard checkpoint answer: malformed");
  return f;
}

std::vector<char> encode(const shard_restore_request& q) {
  std::vector<char> out(request_header_bytes + 4 + 8 + 2 + q.file.name.size() + 4 + q.slices.size() * geometry_bytes);
  byte_writer w(out.data());
  put_header(w, q.header);
  w.put(q.file.checksum);
  w.put(q.file.bytes);
  w.text(q.file.name);
  w.put(static_cast<uint32_t>(q.slices.size()));
  for (const auto& g : q.slices) {
    w.put(g.axis);
    w.put(g.full_rows);
    w.put(g.full_cols);
    w.put(g.begin);
    w.put(g.end);
  }
  return out;
}

caf::expected<shard_restore_request> decode_shard_restore_request(const char* data, size_t size) {
  byte_reader r(data, size);
  shard_restore_request q;
  uint32_t n = 0;
  if (!get_header(r, q.header) || !r.get(q.file.checksum) || !r.get(q.file.bytes) || !r.text(q.file.name, max_file_name)
      || !r.get(n))
    return fail("shard restore frame: truncated");
  if (auto err = check_header(q.header, "shard restore frame")) return err;
  if (!plain_name(q.file.name)) return fail("shard restore frame: the file name is not a plain name");
  if (n > max_shard_tensors || n > r.left() / geometry_bytes)
    return fail("shard restore frame: count " + std::to_string(n) + " exceeds the cap or the frame");
  q.slices.resize(n);
  for (auto& g : q.slices)
    if (!r.get(g.axis) || !r.get(g.full_rows) || !r.get(g.full_cols) || !r.get(g.begin) || !r.get(g.end))
      return fail("shard restore frame: truncated");
  if (r.left() != 0) return fail("shard restore frame: trailing bytes");
  return q;
}

}  // namespace cleave
