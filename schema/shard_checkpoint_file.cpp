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
#include "schema/errors.hpp"
#include "schema/saved_state.hpp"
#include "schema/shard_wire.hpp"
#include "schema/wire.hpp"

namespace fs = std::filesystem;

namespace cleave {

namespace {

constexpr char magic[8] = {'C', 'L', 'V', 'S', 'H', 'C', 'K', '\0'};
constexpr uint32_t format_version = 1;
constexpr size_t crc_offset = 20;
constexpr size_t max_file_name = 255;

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

caf::error check_header(const shard_checkpoint_header& h, const std::string& name) {
  if (h.shards == 0 || h.shards > max_checkpoint_shards || h.shard >= h.shards)
    return fail(name + ": shard " + std::to_string(h.shard) + " of " + std::to_string(h.shards)
                + " is out of range (1 to " + std::to_string(max_checkpoint_shards) + " shards)");
  return caf::none;
}

std::string errno_text() { return std::strerror(errno); }

// The file's first header_bytes: magic, version, the header's fields with
// the checksum between them, and the payload's length.
struct file_head {
  uint32_t version = format_version;
  uint32_t crc = 0;
  uint64_t payload = 0;
  shard_checkpoint_header h;
};

struct magic_field : wire::custom_field {
  void put(wire::writer& w) const { w.bytes().raw(magic, sizeof(magic)); }
  bool get(wire::reader& r) const {
    return (r.left() >= sizeof(magic) && std::memcmp(r.bytes().position(), magic, sizeof(magic)) == 0
            && r.bytes().skip(sizeof(magic)))
           || r.fail("not a Cleave shard checkpoint (bad magic)");
  }
};

template <class M, class Io>
wire::fields_of<M, file_head> wire_fields(M& f, Io& io) {
  return io(magic_field{}, f.version, f.h.shard, f.h.shards, f.crc, f.h.step, f.h.set_id, f.payload);
}

const size_t header_bytes = wire::size_of(file_head{});

}  // namespace

std::string shard_checkpoint_name(uint64_t step, uint32_t shard, uint32_t shards) {
  char name[80];
  std::snprintf(name, sizeof(name), "shard-%010llu-%02u-of-%02u.clvshard", static_cast<unsigned long long>(step),
                shard, shards);
  return name;
}

namespace {

// This shard's files in dir (newest step first), and the temporaries a
// killed writer of this shard left.
struct own_files {
  std::vector<std::pair<uint64_t, fs::path>> found;
  std::vector<fs::path> temporaries;
};

own_files own_files_in(const std::string& dir, const shard_checkpoint_header& h) {
  char pattern[64];
  std::snprintf(pattern, sizeof(pattern), R"(shard-(\d{10})-%02u-of-%02u\.clvshard)", h.shard, h.shards);
  const std::regex mine(pattern);
  const std::string suffix = shard_checkpoint_name(0, h.shard, h.shards).substr(16);  // "-II-of-CC.clvshard"
  own_files out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    std::smatch m;
    if (std::regex_match(n, m, mine)) out.found.emplace_back(std::stoull(m[1].str()), it->path());
    else if (n.rfind(".shard-", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0
             && n.find(suffix) != std::string::npos)
      out.temporaries.push_back(it->path());
  }
  std::sort(out.found.begin(), out.found.end(), [](auto& a, auto& b) { return a.first > b.first; });
  return out;
}

}  // namespace

caf::expected<shard_file_ref> write_shard_checkpoint(const std::string& dir, const shard_checkpoint_header& h,
                                                     const std::vector<shard_checkpoint_slice>& slices,
                                                     const std::optional<std::vector<uint64_t>>& kept_steps) {
  if (auto err = check_header(h, "shard checkpoint")) return err;
  // The payload is laid out as an attach frame. Its fixed fields go into one
  // buffer after the file's head; the tensors' floats are written from where they are.
  const auto payload_fields = wire::list<uint32_t>(slices, max_shard_tensors);
  file_head head;
  head.h = h;
  head.payload = wire::size_of(payload_fields);
  uint64_t float_bytes = 0;
  for (const auto& s : slices)
    for (const tensor* t : {s.value, s.adam_m, s.adam_v}) float_bytes += static_cast<uint64_t>(t->size()) * sizeof(float);
  std::vector<char> fixed(header_bytes + head.payload - float_bytes);
  std::vector<std::string_view> parts;
  parts.emplace_back(fixed.data(), header_bytes);
  wire::writer w(fixed.data() + header_bytes, parts);
  w(payload_fields);
  w.finish();
  wire::write(fixed.data(), head);  // the checksum covers the head but its own field
  head.crc = checksum_of(parts);
  wire::write(fixed.data(), head);
  const uint32_t crc = head.crc;
  const uint64_t payload = head.payload;

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("cannot create checkpoint directory " + dir + ": " + ec.message());
  if (kept_steps) {
    // Files no coordinator file names go first: their room may be what this write needs.
    const auto own = own_files_in(dir, h);
    for (const auto& t : own.temporaries) fs::remove(t, ec);
    for (const auto& [step, path] : own.found)
      if (step != h.step && std::find(kept_steps->begin(), kept_steps->end(), step) == kept_steps->end())
        fs::remove(path, ec);
  }
  shard_file_ref out{shard_checkpoint_name(h.step, h.shard, h.shards), crc, header_bytes + payload};
  if (auto err = write_file_atomically((fs::path(dir) / out.name).string(), parts, "shard checkpoint")) return err;
  if (!kept_steps) {
    const auto own = own_files_in(dir, h);
    for (const auto& t : own.temporaries) fs::remove(t, ec);
    for (size_t i = 3; i < own.found.size(); ++i) fs::remove(own.found[i].second, ec);
  }
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
  if (auto err = check_readable_size(static_cast<uint64_t>(st.st_size), path)) return err;
  std::vector<char> bytes(static_cast<size_t>(st.st_size));
  if (auto err = read_exactly(fd, bytes.data(), bytes.size(), path)) return err;
  auto out = read_shard_checkpoint_bytes(bytes.data(), bytes.size(), path);
  if (out) out->file.name = fs::path(path).filename().string();
  return out;
}

caf::expected<shard_checkpoint_data> read_shard_checkpoint_bytes(const char* data, size_t size,
                                                                 const std::string& name) {
  if (size < header_bytes)
    return fail(name + ": truncated shard checkpoint (" + std::to_string(size) + " bytes, smaller than its header)");
  file_head head;
  wire::reader r(data, header_bytes);
  if (!r(head)) return fail(name + ": " + r.why());
  const uint32_t crc = head.crc;
  const uint64_t payload = head.payload;
  shard_checkpoint_data out;
  out.header = head.h;
  if (head.version != format_version)
    return fail(name + ": shard checkpoint format version " + std::to_string(head.version)
                + ", this build reads version " + std::to_string(format_version));
  if (payload != size - header_bytes)
    return fail(name + ": truncated or padded shard checkpoint: header promises " + std::to_string(payload)
                + " payload bytes, file holds " + std::to_string(size - header_bytes));
  if (checksum_of({std::string_view(data, header_bytes), std::string_view(data + header_bytes, payload)}) != crc)
    return fail(name + ": checksum mismatch (the file is corrupt)");
  if (auto err = check_header(out.header, name)) return err;
  auto slices = decode_shard_attach(data + header_bytes, payload);
  if (!slices) return fail(name + ": " + describe(slices.error()));
  for (size_t i = 0; i < slices->size(); ++i) {
    const auto& e = (*slices)[i];
    if (auto err = check_saved_values(e.value, e.adam_m, e.adam_v, name + ": parameter " + std::to_string(i)))
      return err;
  }
  out.slices = std::move(*slices);
  out.file = {name, crc, size};
  return out;
}

template <class M, class Io>
wire::fields_of<M, shard_checkpoint_header> wire_fields(M& h, Io& io) {
  return io(h.shard, h.shards, h.step, h.set_id);
}

template <class M, class Io>
wire::fields_of<M, shard_file_ref> wire_fields(M& f, Io& io) {
  return io(f.checksum, f.bytes, wire::text(f.name, max_file_name));
}

template <class M, class Io>
wire::fields_of<M, shard_slice_geometry> wire_fields(M& g, Io& io) {
  return io(g.axis, g.full_rows, g.full_cols, g.begin, g.end);
}

template <class M, class Io>
wire::fields_of<M, shard_restore_request> wire_fields(M& q, Io& io) {
  return io(q.header, q.file, wire::list<uint32_t>(q.slices, max_shard_tensors));
}

template <class M, class Io>
wire::fields_of<M, shard_checkpoint_request> wire_fields(M& q, Io& io) {
  return io(q.header, wire::tail(wire::flag(q.listed), wire::list<uint32_t>(q.kept_steps, max_kept_sets)));
}

std::vector<char> encode(const shard_checkpoint_request& q) { return wire::encode(q); }

caf::expected<shard_checkpoint_request> decode_shard_checkpoint_request(const char* data, size_t size) {
  auto q = wire::read_whole<shard_checkpoint_request>(data, size, "shard checkpoint frame");
  if (!q) return q;
  if (auto err = check_header(q->header, "shard checkpoint frame")) return err;
  return q;
}

std::vector<char> encode(const shard_file_ref& f) { return wire::encode(f); }

namespace {

// A file name a peer sent: a plain name in the folder, never a path.
bool plain_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos && n.find('\0') == std::string::npos;
}

}  // namespace

caf::expected<shard_file_ref> decode_shard_file_ref(const char* data, size_t size) {
  shard_file_ref f;
  if (!wire::decode_exact(data, size, f) || !plain_name(f.name)) return fail("shard checkpoint answer: malformed");
  return f;
}

std::vector<char> encode(const shard_restore_request& q) { return wire::encode(q); }

caf::expected<shard_restore_request> decode_shard_restore_request(const char* data, size_t size) {
  auto q = wire::read_whole<shard_restore_request>(data, size, "shard restore frame");
  if (!q) return q;
  if (auto err = check_header(q->header, "shard restore frame")) return err;
  if (!plain_name(q->file.name)) return fail("shard restore frame: the file name is not a plain name");
  return q;
}

}  // namespace cleave
