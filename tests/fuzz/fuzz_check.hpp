#pragma once
// A property a fuzz target checks on every input. Not assert(): it must hold
// whatever the build type, and the message names the broken property.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

// An encoder's output is exactly the bytes its decoder accepted: a decoder
// takes no frame its sender could not have made.
inline void same_bytes(const std::vector<char>& out, const char* data, size_t size) {
  FUZZ_CHECK(out.size() == size && (size == 0 || std::memcmp(out.data(), data, size) == 0));
}
