// Checkpoint files (schema/checkpoint_file.hpp), which a resumed run reads
// from disk. Each input is read twice: as it is, for the header checks, and
// with a valid header and CRC put in front of its payload, so the fuzzer
// spends its time in the Cap'n Proto message instead of on the checksum.
#include <cstring>
#include <vector>

#include <zlib.h>

#include "schema/checkpoint_file.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

namespace {

constexpr size_t header_bytes = 24;

void check(const caf::expected<checkpoint>& ck, size_t file_size) {
  if (!ck) return;
  size_t floats = 0;
  for (const auto& p : ck->parameters)
    for (const tensor* t : {&p.value, &p.adam_m, &p.adam_v}) {
      FUZZ_CHECK(t->rows() >= 0 && t->cols() >= 0);
      floats += static_cast<size_t>(t->size());
    }
  // Every value came from the file: nothing was invented.
  FUZZ_CHECK(floats * sizeof(float) <= file_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(read_checkpoint_bytes(reinterpret_cast<const char*>(data), size), size);
  if (size < header_bytes) return 0;

  const size_t len = (size - header_bytes) / 8 * 8;
  std::vector<char> file(header_bytes + len);
  const uint32_t version = 1;
  const auto crc = static_cast<uint32_t>(crc32_z(crc32_z(0, nullptr, 0), data + header_bytes, len));
  const uint64_t len64 = len;
  std::memcpy(file.data(), "CLVCKPT", 8);
  std::memcpy(file.data() + 8, &version, 4);
  std::memcpy(file.data() + 12, &crc, 4);
  std::memcpy(file.data() + 16, &len64, 8);
  std::memcpy(file.data() + header_bytes, data + header_bytes, len);
  check(read_checkpoint_bytes(file.data(), file.size()), file.size());
  return 0;
}
