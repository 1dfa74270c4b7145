// Byzantine files (actors/device/byzantine_file.hpp, --byzantine=FILE): JSON
// from disk. The first byte is the fleet's size. Every accepted file's lies
// are then told to a small tile, which must stay consistent.
#include <cmath>
#include <string_view>

#include "actors/device/byzantine_file.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int devices = data[0] % 32;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto fleet = byzantine_from_text(text, "byzantine", devices);
  if (!fleet) return 0;
  for (const auto& [dev, lies] : *fleet) {
    FUZZ_CHECK(dev >= 0 && dev < devices);
    FUZZ_CHECK(!lies.empty());
    liar l(lies, 1, dev);
    for (uint64_t step = 1; step <= 3; ++step) {
      tile_result r;
      r.key = tile_key{step, 0, 0};
      r.rows = 2;
      r.cols = 3;
      r.data = {1, -2, 3, 0, 5, -6};
      l.apply(r);
      FUZZ_CHECK(static_cast<int64_t>(r.data.size()) == r.rows * r.cols);
    }
  }
  return 0;
}
