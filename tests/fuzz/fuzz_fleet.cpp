// Fleet files (schema/profile.hpp, --fleet=FILE): JSON from disk.
#include <string_view>

#include "schema/profile.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto fleet = parse_fleet(std::string_view(reinterpret_cast<const char*>(data), size), "fleet");
  if (!fleet) return 0;
  FUZZ_CHECK(!fleet->empty() && fleet->size() <= 4096);
  for (const auto& p : *fleet) FUZZ_CHECK(!validate(p));
  return 0;
}
