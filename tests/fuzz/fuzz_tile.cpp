// Tile frames (schema/tile_codec.hpp): the first byte picks task, result or
// miss. Whatever decodes must encode back to what was decoded.
#include <cstring>
#include <vector>

#include "schema/tile_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

namespace {

// Bitwise, so a NaN payload still compares equal to itself.
bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size()
         && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same(const operand& a, const operand& b) {
  return a.key == b.key && a.rows == b.rows && a.cols == b.cols && a.trans == b.trans
         && same_floats(a.data, b.data);
}

template <class T>
std::vector<char> encoded(const T& v) {
  std::vector<char> out(encoded_size(v));
  encode(v, out.data());
  return out;
}

void task(const char* data, size_t size) {
  auto t = decode_task(data, size);
  if (!t) return;
  for (const operand* op : {&t->a, &t->b})
    FUZZ_CHECK(op->data.empty() || static_cast<int64_t>(op->data.size()) == op->rows * op->cols);
  auto bytes = encoded(*t);
  // A flag byte may claim values for an empty block, so compare what decodes.
  auto back = decode_task(bytes.data(), bytes.size());
  FUZZ_CHECK(back && back->key == t->key && same(back->a, t->a) && same(back->b, t->b));
}

void result(const char* data, size_t size) {
  auto r = decode_result(data, size);
  if (!r) return;
  FUZZ_CHECK(static_cast<int64_t>(r->data.size()) == r->rows * r->cols);
  auto bytes = encoded(*r);
  FUZZ_CHECK(bytes.size() == size && std::memcmp(bytes.data(), data, size) == 0);
}

void miss(const char* data, size_t size) {
  auto m = decode_miss(data, size);
  if (!m) return;
  auto bytes = encoded(*m);
  FUZZ_CHECK(bytes.size() == size && std::memcmp(bytes.data(), data, size) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto* body = reinterpret_cast<const char*>(data + 1);
  switch (data[0] % 3) {
    case 0: task(body, size - 1); break;
    case 1: result(body, size - 1); break;
    default: miss(body, size - 1); break;
  }
  return 0;
}
