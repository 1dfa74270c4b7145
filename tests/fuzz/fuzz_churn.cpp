// Churn files (actors/churn/churn_schedule.hpp, --churn=FILE): JSON from
// disk. The first byte is the fleet's size at start.
#include <string_view>

#include "actors/churn/churn_schedule.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int devices = data[0] % 32;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto s = churn_schedule::from_text(text, "churn", devices);
  if (!s) return 0;
  // A schedule names steps from 1 on, and devices by their index.
  FUZZ_CHECK(s->due(0).empty());
  for (const auto& ev : s->due(1)) FUZZ_CHECK(ev.step == 1 && ev.device >= 0);
  return 0;
}
