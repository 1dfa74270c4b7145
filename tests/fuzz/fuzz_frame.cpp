// The bulk channel's frames as its broker reads them (bulk_channel.cpp,
// on_header and on_data): header, the checks on it, payload, with both
// sides' window arithmetic, which must never wrap.
#include <algorithm>
#include <cstring>
#include <vector>

#include "actors/transport/frame.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave::transport;

namespace {

void check_lone_decoders(const uint8_t* data, size_t size, uint64_t cap) {
  auto h = decode_header(data, size, cap);
  FUZZ_CHECK(!h || size == frame_header_size);
  if (h) FUZZ_CHECK(std::memcmp(encode_header(*h).data(), data, size) == 0);
  auto hl = decode_hello(data, size);
  FUZZ_CHECK(!hl || (size == hello_payload_size && hl->receive_window > 0));
  if (hl) FUZZ_CHECK(std::memcmp(encode_hello(*hl).data(), data, size) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The cap and our window come from the input, so small ones are reached.
  const uint64_t cap = uint64_t{1} << (data[0] % 40);
  receive_window rw(frame_cost(0) << (data[1] % 20));
  data += 2;
  size -= 2;
  check_lone_decoders(data, size, cap);

  send_window sw;  // ours towards the peer; the peer's credit frames feed it
  bool hello_received = false;
  std::vector<uint64_t> at_sink;  // delivered, not yet consumed
  size_t at = 0;
  while (size - at >= frame_header_size) {
    auto h = decode_header(data + at, frame_header_size, cap);
    if (!h) return 0;
    FUZZ_CHECK(h->length <= cap);
    at += frame_header_size;
    if (h->kind >= first_reserved_kind) {
      if (h->kind == kind_hello) {
        if (hello_received || h->length != hello_payload_size) return 0;
        if (size - at < hello_payload_size) return 0;
        auto hl = decode_hello(data + at, hello_payload_size);
        if (!hl) return 0;
        at += hello_payload_size;
        hello_received = true;
        sw.open(hl->receive_window);
      } else if (h->kind == kind_credit) {
        if (!hello_received || h->length != 0) return 0;
        const uint64_t before = sw.in_flight();
        if (sw.credit(h->tag)) {
          FUZZ_CHECK(h->tag > before);
          return 0;
        }
        FUZZ_CHECK(sw.in_flight() == before - h->tag);
      } else {
        return 0;
      }
      continue;
    }
    if (!hello_received) return 0;
    const uint64_t before = rw.outstanding();
    if (rw.admit(h->length)) {
      FUZZ_CHECK(before > 0);
      return 0;
    }
    // Only a frame alone may exceed the window.
    FUZZ_CHECK(rw.outstanding() <= rw.window() || before == 0);
    FUZZ_CHECK(rw.outstanding() == before + frame_cost(h->length));
    if (size - at < h->length) return 0;
    at += static_cast<size_t>(h->length);
    at_sink.push_back(h->length);
    // The tag's low bits stand for the sink's pace and for what we send.
    if (h->tag & 1) {
      for (auto len : at_sink) rw.consumed(len);
      at_sink.clear();
    }
    const uint64_t held = rw.outstanding();
    const uint64_t credit = rw.take_credit(at_sink.empty());
    FUZZ_CHECK(credit <= held && rw.outstanding() == held - credit);
    const uint64_t len = (h->tag >> 1) % (cap + 1);
    if (sw.can_send(len)) {
      const uint64_t was = sw.in_flight();
      sw.sent(len);
      FUZZ_CHECK(sw.in_flight() <= sw.window() || was == 0);
    }
  }
  return 0;
}
