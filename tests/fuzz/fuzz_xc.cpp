// Extreme-classification files (training/data/xc_format.hpp, --dataset=xc:DIR):
// XMLRepository text from disk. Whatever parses must hold its promises (ids in
// range, rows sorted, offsets adding up) and write back to text that parses
// to the same dataset.
#include <cstring>
#include <string_view>

#include "tests/fuzz/fuzz_check.hpp"
#include "training/data/xc_format.hpp"

using namespace cleave;

namespace {

void check_rows(const std::vector<int64_t>& offsets, const std::vector<int32_t>& ids, int64_t samples,
                int64_t bound) {
  FUZZ_CHECK(static_cast<int64_t>(offsets.size()) == samples + 1);
  FUZZ_CHECK(offsets.front() == 0 && offsets.back() == static_cast<int64_t>(ids.size()));
  for (int64_t r = 0; r < samples; ++r)
    for (int64_t k = offsets[r]; k < offsets[r + 1]; ++k) {
      FUZZ_CHECK(ids[k] >= 0 && ids[k] < bound);
      FUZZ_CHECK(k == offsets[r] || ids[k] > ids[k - 1]);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto d = parse_xc(text, "xc");
  if (!d) return 0;
  check_rows(d->feature_offsets, d->feature_ids, d->samples, d->features);
  check_rows(d->label_offsets, d->label_ids, d->samples, d->labels);
  FUZZ_CHECK(d->values.size() == d->feature_ids.size());
  auto written = format_xc(*d);
  FUZZ_CHECK(written);
  auto back = parse_xc(*written, "xc");
  FUZZ_CHECK(back);
  FUZZ_CHECK(back->samples == d->samples && back->features == d->features && back->labels == d->labels);
  FUZZ_CHECK(back->feature_offsets == d->feature_offsets && back->feature_ids == d->feature_ids);
  FUZZ_CHECK(back->label_offsets == d->label_offsets && back->label_ids == d->label_ids);
  // Bitwise: -0 must come back as -0.
  FUZZ_CHECK(back->values.size() == d->values.size() &&
             (d->values.empty() ||
              std::memcmp(back->values.data(), d->values.data(), d->values.size() * sizeof(float)) == 0));
  return 0;
}
