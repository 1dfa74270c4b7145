// The first frame on a bulk connection (actors/transport/admission.hpp):
// anyone who reaches the port can send it.
#include <cstring>

#include "actors/transport/admission.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave::transport;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto h = decode_device_hello(reinterpret_cast<const char*>(data), size);
  if (!h) return 0;
  FUZZ_CHECK(size == device_hello_size && h->device >= 0);
  FUZZ_CHECK(std::memcmp(encode_device_hello(*h).data(), data, size) == 0);
  return 0;
}
