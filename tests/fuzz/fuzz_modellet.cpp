// Model-let frames (schema/modellet_codec.hpp); the first byte picks the
// decoder. A message that decodes re-encodes to the same bytes and fits its
// kind's cap under the largest tile cap, so no decoder accepts a frame its
// sender could not have made.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "schema/edge_codec.hpp"
#include "schema/modellet_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size < 1) return 0;
  const auto* data = reinterpret_cast<const char*>(raw + 1);
  const size_t size = raw_size - 1;
  switch (raw[0] % 8) {
    case 0:
      if (auto m = decode_ml_place(data, size)) same_bytes(encode(*m), data, size);
      break;
    case 1:
      if (auto m = decode_ml_state(data, size)) same_bytes(encode_ml_state(*m), data, size);
      break;
    case 2:
      // The encoder keeps labels in [begin, end): the widest range stops
      // short of INT32_MAX itself.
      if (auto m = decode_ml_forward(data, size);
          m && std::count(m->label_ids.begin(), m->label_ids.end(), std::numeric_limits<int32_t>::max()) == 0)
        same_bytes(encode_ml_forward(m->step, m->h, m->labels(), 0, std::numeric_limits<int32_t>::max()),
                   data, size);
      break;
    case 3:
      if (auto m = decode_ml_scores(data, size)) {
        FUZZ_CHECK(m->ids.size() == m->logits.size() && m->stats.size() + 1 == m->offsets.size());
        same_bytes(encode(*m), data, size);
      }
      break;
    case 4:
      if (auto m = decode_ml_grads(data, size)) same_bytes(encode_ml_grads(*m), data, size);
      break;
    case 5:
      if (auto m = decode_ml_hidden_grad(data, size)) same_bytes(encode(*m), data, size);
      break;
    case 6:
      if (auto m = decode_ml_update(data, size)) {
        FUZZ_CHECK(size <= edge_payload_cap(edge_ml_update, 0));
        same_bytes(encode(*m), data, size);
      }
      break;
    default:
      if (auto v = decode_ml_done(data, size)) same_bytes(encode_ml_done(*v), data, size);
      break;
  }
  return 0;
}
