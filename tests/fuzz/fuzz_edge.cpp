// The device edge's own messages (schema/edge_codec.hpp): join, welcome,
// refusal and heartbeat; the first byte picks the decoder. Tasks, results and misses are
// tile_codec's (fuzz_tile). A message that decodes must fit its kind's cap,
// or the channel would refuse a frame the peer had the right to send.
#include <cstring>
#include <vector>

#include "schema/edge_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size < 1) return 0;
  const auto* data = reinterpret_cast<const char*>(raw + 1);
  const size_t size = raw_size - 1;
  const uint64_t any_tile = ~uint64_t{0};
  switch (raw[0] % 4) {
    case 0:
      if (auto m = decode_join(data, size)) {
        FUZZ_CHECK(size <= edge_payload_cap(edge_join, any_tile));
        FUZZ_CHECK(m->profile.name.size() <= max_profile_name && m->token.size() <= max_token_bytes);
        same_bytes(encode(*m), data, size);
      }
      break;
    case 1:
      if (auto m = decode_welcome(data, size)) {
        FUZZ_CHECK(size <= edge_payload_cap(edge_welcome, any_tile));
        FUZZ_CHECK(m->heartbeat_seconds > 0 && m->heartbeat_seconds <= 60);
        same_bytes(encode(*m), data, size);
      }
      break;
    case 2:
      if (auto reason = decode_refusal(data, size)) {
        FUZZ_CHECK(size <= edge_payload_cap(edge_refused, any_tile));
        same_bytes(encode_refusal(*reason), data, size);
      }
      break;
    default:
      if (auto peak = decode_heartbeat(data, size)) {
        FUZZ_CHECK(size <= edge_payload_cap(edge_heartbeat, any_tile));
        if (size > 0) same_bytes(encode_heartbeat(*peak), data, size);
      }
      break;
  }
  return 0;
}
