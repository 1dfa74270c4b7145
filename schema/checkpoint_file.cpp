#include "schema/checkpoint_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <regex>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "schema/atomic_file.hpp"
#include "schema/checkpoint.capnp.h"
#include "schema/errors.hpp"
#include "schema/saved_state.hpp"
#include "schema/tensor_codec.hpp"

namespace fs = std::filesystem;

namespace cleave {

std::string to_string(const model_config& cfg) {
  std::string out = cfg.kind;
  if (cfg.kind == "mlp" || cfg.kind == "xc") {
    out += " " + std::to_string(cfg.inputs);
    for (auto h : cfg.hidden) out += "-" + std::to_string(h);
    out += "-" + std::to_string(cfg.classes);
  } else {
    out += " d=" + std::to_string(cfg.d_model) + " layers=" + std::to_string(cfg.layers)
           + " heads=" + std::to_string(cfg.heads) + " ffn=" + std::to_string(cfg.ffn)
           + " ctx=" + std::to_string(cfg.context) + " vocab=" + std::to_string(cfg.vocab);
  }
  return out;
}

namespace {

constexpr char magic[8] = {'C', 'L', 'V', 'C', 'K', 'P', 'T', '\0'};
constexpr uint32_t format_version = 1;
constexpr size_t header_bytes = 24;

std::string errno_text() { return std::strerror(errno); }

uint32_t crc_of(const void* data, size_t len) {
  return static_cast<uint32_t>(
    crc32_z(crc32_z(0, nullptr, 0), static_cast<const Bytef*>(data), len));
}

void encode_model(const model_config& m, ModelConfig::Builder out) {
  out.setKind(m.kind);
  out.setInputs(static_cast<uint64_t>(m.inputs));
  auto hidden = out.initHidden(static_cast<unsigned>(m.hidden.size()));
  for (size_t i = 0; i < m.hidden.size(); ++i)
    hidden.set(static_cast<unsigned>(i), static_cast<uint64_t>(m.hidden[i]));
  out.setClasses(static_cast<uint64_t>(m.classes));
  out.setVocab(static_cast<uint64_t>(m.vocab));
  out.setContext(static_cast<uint64_t>(m.context));
  out.setDModel(static_cast<uint64_t>(m.d_model));
  out.setLayers(static_cast<uint64_t>(m.layers));
  out.setHeads(static_cast<uint64_t>(m.heads));
  out.setFfn(static_cast<uint64_t>(m.ffn));
}

model_config decode_model(ModelConfig::Reader in) {
  model_config m;
  m.kind = in.getKind().cStr();
  m.inputs = static_cast<int64_t>(in.getInputs());
  for (auto h : in.getHidden()) m.hidden.push_back(static_cast<int64_t>(h));
  m.classes = static_cast<int64_t>(in.getClasses());
  m.vocab = static_cast<int64_t>(in.getVocab());
  m.context = static_cast<int64_t>(in.getContext());
  m.d_model = static_cast<int64_t>(in.getDModel());
  m.layers = static_cast<int64_t>(in.getLayers());
  m.heads = static_cast<int64_t>(in.getHeads());
  m.ffn = static_cast<int64_t>(in.getFfn());
  return m;
}

}  // namespace

caf::expected<std::string> write_checkpoint(const std::string& dir, const checkpoint& ck,
                                            int keep) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("cannot create checkpoint directory " + dir + ": " + ec.message());

  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<Checkpoint>();
  encode_model(ck.model, root.initModel());
  root.setDataset(ck.dataset);
  root.setSeed(ck.seed);
  root.setBatch(ck.batch);
  root.setStep(ck.step);
  root.setEpoch(ck.epoch);
  root.setIndexInEpoch(ck.index_in_epoch);
  root.setRestarts(ck.restarts);
  auto params = root.initParameters(static_cast<unsigned>(ck.parameters.size()));
  for (size_t i = 0; i < ck.parameters.size(); ++i) {
    const auto& p = ck.parameters[i];
    auto out = params[static_cast<unsigned>(i)];
    out.setName(p.name);
    encode_tensor(p.value, out.initValue());
    encode_tensor(p.adam_m, out.initAdamM());
    encode_tensor(p.adam_v, out.initAdamV());
  }
  if (ck.shards.count > 0) {
    auto set = root.initShardSet();
    set.setCount(ck.shards.count);
    set.setId(ck.shards.id);
    auto files = set.initFiles(static_cast<unsigned>(ck.shards.files.size()));
    for (size_t i = 0; i < ck.shards.files.size(); ++i) {
      auto f = files[static_cast<unsigned>(i)];
      f.setName(ck.shards.files[i].name);
      f.setChecksum(ck.shards.files[i].checksum);
      f.setBytes(ck.shards.files[i].bytes);
    }
  }
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();

  char header[header_bytes];
  std::memcpy(header, magic, 8);
  const uint32_t crc = crc_of(bytes.begin(), bytes.size());
  const uint64_t len = bytes.size();
  std::memcpy(header + 8, &format_version, 4);
  std::memcpy(header + 12, &crc, 4);
  std::memcpy(header + 16, &len, 8);

  char name[64];
  std::snprintf(name, sizeof(name), "checkpoint-%010llu.clvck",
                static_cast<unsigned long long>(ck.step));
  const std::string final_path = (fs::path(dir) / name).string();
  if (auto err = write_file_atomically(
        final_path,
        {std::string_view(header, header_bytes),
         std::string_view(reinterpret_cast<const char*>(bytes.begin()), bytes.size())},
        "checkpoint"))
    return err;

  // Temporaries left by a writer that was killed mid-write (one writer per directory).
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.rfind(".checkpoint-", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0)
      fs::remove(it->path(), ec);
  }
  auto all = list_checkpoints(dir);
  for (size_t i = static_cast<size_t>(std::max(keep, 1)); i < all.size(); ++i)
    fs::remove(all[i], ec);
  return final_path;
}

namespace {

// Magic, version and length against the whole file's size, before anything
// is allocated for the payload.
caf::error check_header(const char* header, uint64_t file_size, const std::string& name) {
  if (file_size < header_bytes)
    return fail(name + ": truncated checkpoint (" + std::to_string(file_size)
                + " bytes, smaller than its header)");
  if (std::memcmp(header, magic, 8) != 0) return fail(name + ": not a Cleave checkpoint (bad magic)");
  uint32_t version = 0;
  uint64_t len = 0;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&len, header + 16, 8);
  if (version != format_version)
    return fail(name + ": checkpoint format version " + std::to_string(version)
                + ", this build reads version " + std::to_string(format_version));
  if (len != file_size - header_bytes || len % sizeof(capnp::word) != 0)
    return fail(name + ": truncated or padded checkpoint: header promises " + std::to_string(len)
                + " payload bytes, file holds " + std::to_string(file_size - header_bytes));
  return caf::none;
}

}  // namespace

caf::expected<checkpoint> read_checkpoint(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open checkpoint " + path + ": " + errno_text());
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_on_exit{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail("cannot stat checkpoint " + path + ": " + errno_text());
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  char header[header_bytes];
  if (file_size >= header_bytes)
    if (auto err = read_exactly(fd, header, header_bytes, path)) return err;
  if (auto err = check_header(header, file_size, path)) return err;
  if (auto err = check_readable_size(file_size, path)) return err;
  // Word-aligned, so read_checkpoint_bytes reads the payload in place.
  auto words = kj::heapArray<capnp::word>(file_size / sizeof(capnp::word));
  auto* bytes = reinterpret_cast<char*>(words.begin());
  std::memcpy(bytes, header, header_bytes);
  if (auto err = read_exactly(fd, bytes + header_bytes, file_size - header_bytes, path)) return err;
  return read_checkpoint_bytes(bytes, file_size, path);
}

caf::expected<checkpoint> read_checkpoint_bytes(const char* data, size_t size,
                                                const std::string& name) {
  if (auto err = check_header(data, size, name)) return err;
  uint32_t crc = 0;
  std::memcpy(&crc, data + 12, 4);
  const size_t len = size - header_bytes;
  const char* payload = data + header_bytes;
  if (crc_of(payload, len) != crc) return fail(name + ": checksum mismatch (the file is corrupt)");
  kj::Array<capnp::word> copy;
  kj::ArrayPtr<const capnp::word> words;
  if (reinterpret_cast<uintptr_t>(payload) % alignof(capnp::word) == 0) {
    words = kj::arrayPtr(reinterpret_cast<const capnp::word*>(payload), len / sizeof(capnp::word));
  } else {
    copy = kj::heapArray<capnp::word>(len / sizeof(capnp::word));
    std::memcpy(copy.begin(), payload, len);
    words = copy.asPtr();
  }

  checkpoint ck;
  try {
    capnp::ReaderOptions opts;
    // Decoding visits each tensor's chunks twice (length check, then copy);
    // the limit still bounds any amplification to a few times the file size.
    opts.traversalLimitInWords = 4 * (len / sizeof(capnp::word)) + 1024;
    capnp::FlatArrayMessageReader reader(words, opts);
    auto root = reader.getRoot<Checkpoint>();
    ck.model = decode_model(root.getModel());
    ck.dataset = root.getDataset().cStr();
    ck.seed = root.getSeed();
    ck.batch = root.getBatch();
    ck.step = root.getStep();
    ck.epoch = root.getEpoch();
    ck.index_in_epoch = root.getIndexInEpoch();
    ck.restarts = root.getRestarts();
    for (auto p : root.getParameters()) {
      parameter_state ps;
      ps.name = p.getName().cStr();
      const std::string what = name + ": parameter " + ps.name;
      auto value = decode_tensor(p.getValue(), what);
      if (!value) return value.error();
      auto m = decode_tensor(p.getAdamM(), what + " (AdamW m)");
      if (!m) return m.error();
      auto v = decode_tensor(p.getAdamV(), what + " (AdamW v)");
      if (!v) return v.error();
      if (auto err = check_saved_values(*value, *m, *v, what)) return err;
      ps.value = std::move(*value);
      ps.adam_m = std::move(*m);
      ps.adam_v = std::move(*v);
      ck.parameters.push_back(std::move(ps));
    }
    if (root.hasShardSet()) {
      auto set = root.getShardSet();
      ck.shards.count = set.getCount();
      ck.shards.id = set.getId();
      for (auto f : set.getFiles())
        ck.shards.files.push_back({f.getName().cStr(), f.getChecksum(), f.getBytes()});
      if (ck.shards.count > 64 || ck.shards.files.size() != ck.shards.count)
        return fail(name + ": its shard set names " + std::to_string(ck.shards.files.size()) + " files for "
                    + std::to_string(ck.shards.count) + " shards");
    }
  } catch (const kj::Exception& e) {
    return fail(name + ": malformed checkpoint message: " + e.getDescription().cStr());
  }
  return ck;
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  static const std::regex pattern(R"(checkpoint-(\d{10})\.clvck)");
  std::vector<std::pair<std::string, std::string>> found;  // (step digits, path)
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, m, pattern)) found.emplace_back(m[1].str(), it->path().string());
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::vector<uint64_t> checkpoint_steps(const std::string& dir, size_t most) {
  std::vector<uint64_t> out;
  for (const auto& path : list_checkpoints(dir)) {
    if (out.size() == most) break;
    const std::string name = fs::path(path).filename().string();  // checkpoint-<10 digits>.clvck
    out.push_back(std::stoull(name.substr(11, 10)));
  }
  return out;
}

}  // namespace cleave
