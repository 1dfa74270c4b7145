// The device edge's own messages (schema/edge_codec.hpp): join, welcome,
// refusal and heartbeat, and a relay's hello and routes
// (schema/edge_relay_codec.hpp); the first byte picks the decoder. Tasks, results and misses are
// tile_codec's (fuzz_tile). A message that decodes must fit its kind's cap,
// or the channel would refuse a frame the peer had the right to send.
#include <cstring>
#include <vector>

#include "schema/edge_codec.hpp"
#include "schema/edge_relay_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size < 1) return 0;
  const auto* data = reinterpret_cast<const char*>(raw + 1);
  const size_t size = raw_size - 1;
  const uint64_t any_tile = ~uint64_t{0};
  switch (raw[0] % 6) {
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
    case 3:
      if (auto m = decode_relay_hello(data, size)) {
        FUZZ_CHECK(size <= edge_payload_cap(edge_relay_hello, any_tile));
        FUZZ_CHECK(!m->seat.name.empty() && m->seat.name.size() <= max_relay_name);
        same_bytes(encode(*m), data, size);
      }
      break;
    case 4: {
      std::vector<char> payload(data, data + size);
      const uint64_t tile_cap = 1 << 16;
      if (auto route = take_route(payload, tile_cap)) {
        FUZZ_CHECK(route->session != 0 && routable(route->kind));
        FUZZ_CHECK(payload.size() + edge_route_bytes == size);
        FUZZ_CHECK(size <= edge_payload_cap(edge_routed, tile_cap));
        append_route(payload, *route);
        same_bytes(payload, data, size);
      }
      break;
    }
    default:
      if (auto peak = decode_heartbeat(data, size)) {
        FUZZ_CHECK(size <= edge_payload_cap(edge_heartbeat, any_tile));
        if (size > 0) same_bytes(encode_heartbeat(*peak), data, size);
      }
      break;
  }
  return 0;
}
