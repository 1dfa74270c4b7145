#pragma once
// The bulk channel's wire format and flow-control arithmetic: plain code, no
// actors, no sockets (bulk_channel.cpp drives it from a CAF broker).
//
// Every frame is a fixed 24-byte header, all fields little-endian,
//
//   offset 0  u32 magic    'C','L','V','F' on the wire (0x46564C43 read LE)
//   offset 4  u16 version  1
//   offset 6  u16 kind     caller's message type; >= 0xFF00 reserved (control)
//   offset 8  u64 length   payload bytes that follow; 0 allowed, capped
//   offset 16 u64 tag      caller's correlation field (e.g. a task id)
//
// followed by `length` payload bytes. A socket is hostile: decode_header()
// checks magic, version and the length cap before the caller configures a
// read (and so allocates) anything for the payload.
//
// Control frames (kinds >= 0xFF00):
//   hello  : first frame each side sends; 16-byte payload = u64 receive
//            window, u64 max payload (both LE). Data before hello is an error.
//   credit : no payload; tag = bytes of window returned to the sender.
//
// Flow control is credit based: each frame costs length + frame_cost_overhead
// bytes of the receiver's advertised window; the receiver returns credit once
// its sink has consumed frames. A sender may send a frame if nothing is in
// flight or the frame fits the window; a receiver closes a connection whose
// peer overruns it. The overhead term bounds the number of tiny frames in
// flight, so a peer cannot flood the sink's mailbox with empty frames either.

#include <array>
#include <cstddef>
#include <cstdint>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace cleave::transport {

inline constexpr uint32_t frame_magic = 0x46564C43u;  // "CLVF" as LE bytes
inline constexpr uint16_t frame_version = 1;
inline constexpr size_t frame_header_size = 24;
inline constexpr uint64_t default_max_payload = uint64_t{256} << 20;  // 256 MiB

// Kinds at or above this value are the channel's own control frames.
inline constexpr uint16_t first_reserved_kind = 0xFF00;
inline constexpr uint16_t kind_hello = 0xFF00;
inline constexpr uint16_t kind_credit = 0xFF01;
inline constexpr size_t hello_payload_size = 16;

// Window accounting charge per frame on top of its payload.
inline constexpr uint64_t frame_cost_overhead = 4096;

struct frame_header {
  uint16_t kind = 0;
  uint64_t length = 0;
  uint64_t tag = 0;
  bool operator==(const frame_header& o) const {
    return kind == o.kind && length == o.length && tag == o.tag;
  }
};

using header_bytes = std::array<char, frame_header_size>;

// Writes the 24 header bytes (magic and version filled in) to out.
void encode_header(const frame_header& h, char* out);
header_bytes encode_header(const frame_header& h);

// Decodes and validates a header: exactly frame_header_size bytes, magic,
// version, length <= max_payload. Errors are cleave::fail() with a reason.
caf::expected<frame_header> decode_header(const void* data, size_t size, uint64_t max_payload);

struct hello {
  uint64_t receive_window = 0;
  uint64_t max_payload = 0;
};

using hello_bytes = std::array<char, hello_payload_size>;
hello_bytes encode_hello(const hello& h);
// Exactly hello_payload_size bytes; receive_window must be > 0.
caf::expected<hello> decode_hello(const void* data, size_t size);

inline constexpr uint64_t frame_cost(uint64_t payload_len) {
  return payload_len + frame_cost_overhead;
}

// Receiver side of one connection's window.
class receive_window {
 public:
  explicit receive_window(uint64_t window) : window_(window) {}

  // A data header announcing `payload_len` bytes arrived: accept it (and
  // account for it) or return the error that closes the connection.
  caf::error admit(uint64_t payload_len);

  // The sink is done with a frame of payload_len bytes.
  void consumed(uint64_t payload_len);

  // Credit to send back now (0: none yet). Credit is batched to a quarter of
  // the window unless `sink_idle` (nothing delivered is still pending), which
  // flushes it all so a blocked sender always makes progress; with `lazy`
  // > 0 an idle sink still holds back credit below `lazy` bytes. That is
  // safe only when the window leaves room for the peer's largest frame on
  // top of `lazy` (bulk_options::lazy_credit_bytes checks it).
  uint64_t take_credit(bool sink_idle, uint64_t lazy = 0);

  uint64_t window() const { return window_; }
  uint64_t outstanding() const { return outstanding_; }

 private:
  uint64_t window_;
  uint64_t outstanding_ = 0;  // admitted, not yet credited back
  uint64_t uncredited_ = 0;   // consumed, not yet credited back
};

// Sender side: what the peer advertised and what is in flight.
class send_window {
 public:
  // Called on the peer's hello.
  void open(uint64_t peer_window) {
    peer_window_ = peer_window;
    open_ = true;
  }
  bool is_open() const { return open_; }
  bool can_send(uint64_t payload_len) const {
    return open_ && (in_flight_ == 0 || in_flight_ + frame_cost(payload_len) <= peer_window_);
  }
  void sent(uint64_t payload_len) { in_flight_ += frame_cost(payload_len); }
  // Credit from the peer; more than is in flight is a protocol violation.
  caf::error credit(uint64_t bytes);
  uint64_t in_flight() const { return in_flight_; }
  uint64_t window() const { return peer_window_; }

 private:
  bool open_ = false;
  uint64_t peer_window_ = 0;
  uint64_t in_flight_ = 0;
};

}  // namespace cleave::transport
