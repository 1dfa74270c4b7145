#include "actors/transport/frame.hpp"

#include <algorithm>

#include <cstdio>
#include <string>

#include "schema/errors.hpp"
#include "schema/pacing.hpp"
#include "schema/wire.hpp"

namespace cleave::transport {

static_assert(frame_header_size == paced_frame_header_bytes,
              "an emulated device's pacing counts the edge's frame header");

namespace {

// What a header carries besides the caller's fields.
struct wire_header {
  uint32_t magic = frame_magic;
  uint16_t version = frame_version;
  frame_header h;
};

template <class M, class Io>
wire::fields_of<M, wire_header> wire_fields(M& x, Io& io) {
  return io(x.magic, x.version, x.h.kind, x.h.length, x.h.tag);
}

}  // namespace

template <class M, class Io>
wire::fields_of<M, hello> wire_fields(M& x, Io& io) {
  return io(x.receive_window, x.max_payload);
}

void encode_header(const frame_header& h, char* out) { wire::write(out, wire_header{frame_magic, frame_version, h}); }

header_bytes encode_header(const frame_header& h) {
  header_bytes out;
  encode_header(h, out.data());
  return out;
}

caf::expected<frame_header> decode_header(const void* data, size_t size, uint64_t max_payload) {
  wire_header x;
  if (!wire::decode_exact(static_cast<const char*>(data), size, x))
    return fail("frame header of " + std::to_string(size) + " bytes (expected " +
                std::to_string(frame_header_size) + ")");
  if (x.magic != frame_magic) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "bad frame magic 0x%08x (expected 0x%08x, 'CLVF')", x.magic,
                  frame_magic);
    return fail(buf);
  }
  if (x.version != frame_version)
    return fail("unsupported frame version " + std::to_string(x.version) + " (this build speaks " +
                std::to_string(frame_version) + ")");
  if (x.h.length > max_payload)
    return fail("frame payload of " + std::to_string(x.h.length) + " bytes exceeds the cap of " +
                std::to_string(max_payload) + " bytes");
  return x.h;
}

hello_bytes encode_hello(const hello& h) {
  hello_bytes out;
  wire::write(out.data(), h);
  return out;
}

caf::expected<hello> decode_hello(const void* data, size_t size) {
  hello h;
  if (!wire::decode_exact(static_cast<const char*>(data), size, h))
    return fail("hello payload of " + std::to_string(size) + " bytes (expected " +
                std::to_string(hello_payload_size) + ")");
  if (h.receive_window == 0) return fail("hello advertises a zero receive window");
  return h;
}

caf::error receive_window::admit(uint64_t payload_len) {
  auto cost = frame_cost(payload_len);
  if (outstanding_ > 0 && outstanding_ + cost > window_)
    return fail("peer overran the receive window: " + std::to_string(outstanding_) +
                " bytes outstanding + frame of " + std::to_string(cost) + " > window of " +
                std::to_string(window_));
  outstanding_ += cost;
  return caf::none;
}

void receive_window::consumed(uint64_t payload_len) {
  uncredited_ += frame_cost(payload_len);
  if (uncredited_ > outstanding_) uncredited_ = outstanding_;  // cannot happen; stay sane
}

uint64_t receive_window::take_credit(bool sink_idle, uint64_t lazy) {
  if (uncredited_ == 0) return 0;
  if (uncredited_ < std::max(sink_idle ? lazy : window_ / 4, uint64_t{1})) return 0;
  auto c = uncredited_;
  uncredited_ = 0;
  outstanding_ -= c;
  return c;
}

caf::error send_window::credit(uint64_t bytes) {
  if (bytes > in_flight_)
    return fail("peer returned " + std::to_string(bytes) + " bytes of credit with only " +
                std::to_string(in_flight_) + " in flight");
  in_flight_ -= bytes;
  return caf::none;
}

}  // namespace cleave::transport
