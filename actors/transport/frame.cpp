#include "actors/transport/frame.hpp"

#include <cstdio>
#include <string>

#include "schema/errors.hpp"
#include "schema/pacing.hpp"

namespace cleave::transport {

static_assert(frame_header_size == paced_frame_header_bytes,
              "an emulated device's pacing counts the edge's frame header");

namespace {

void put_u16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v & 0xFF);
  p[1] = static_cast<char>(v >> 8);
}
void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint16_t get_u16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

void encode_header(const frame_header& h, char* out) {
  put_u32(out, frame_magic);
  put_u16(out + 4, frame_version);
  put_u16(out + 6, h.kind);
  put_u64(out + 8, h.length);
  put_u64(out + 16, h.tag);
}

header_bytes encode_header(const frame_header& h) {
  header_bytes out;
  encode_header(h, out.data());
  return out;
}

caf::expected<frame_header> decode_header(const void* data, size_t size, uint64_t max_payload) {
  if (size != frame_header_size)
    return fail("frame header of " + std::to_string(size) + " bytes (expected " +
                std::to_string(frame_header_size) + ")");
  auto p = static_cast<const unsigned char*>(data);
  auto magic = get_u32(p);
  if (magic != frame_magic) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "bad frame magic 0x%08x (expected 0x%08x, 'CLVF')", magic,
                  frame_magic);
    return fail(buf);
  }
  auto version = get_u16(p + 4);
  if (version != frame_version)
    return fail("unsupported frame version " + std::to_string(version) + " (this build speaks " +
                std::to_string(frame_version) + ")");
  frame_header h;
  h.kind = get_u16(p + 6);
  h.length = get_u64(p + 8);
  h.tag = get_u64(p + 16);
  if (h.length > max_payload)
    return fail("frame payload of " + std::to_string(h.length) + " bytes exceeds the cap of " +
                std::to_string(max_payload) + " bytes");
  return h;
}

hello_bytes encode_hello(const hello& h) {
  hello_bytes out;
  put_u64(out.data(), h.receive_window);
  put_u64(out.data() + 8, h.max_payload);
  return out;
}

caf::expected<hello> decode_hello(const void* data, size_t size) {
  if (size != hello_payload_size)
    return fail("hello payload of " + std::to_string(size) + " bytes (expected " +
                std::to_string(hello_payload_size) + ")");
  auto p = static_cast<const unsigned char*>(data);
  hello h;
  h.receive_window = get_u64(p);
  h.max_payload = get_u64(p + 8);
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

uint64_t receive_window::take_credit(bool sink_idle) {
  if (uncredited_ == 0) return 0;
  if (!sink_idle && uncredited_ < window_ / 4) return 0;
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
