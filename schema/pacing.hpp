#pragma once
// The arithmetic of an emulated device's pacing, shared by its tiles and its
// model-let frames: when a piece of work may begin (not before the device's
// earlier work is done) and when its answer may leave, and how long a
// model-let exchange holds the device's links. Pure, so it is tested
// directly and the device actor only applies it.

#include <cstdint>

#include <caf/timestamp.hpp>

#include "schema/profile.hpp"

namespace cleave {

struct paced_span {
  caf::timestamp begin;   // the device starts on it: it arrived and the device is free
  caf::timestamp finish;  // its answer leaves: what the device promises next work after
};

// Work that reached the device at `arrived` and takes it `seconds` as its
// profile says, on a device busy until `busy_until`. `now` is when this host
// finished computing it: an answer never leaves before it exists, so a host
// slower than the profile shows as such rather than being hidden.
paced_span pace(caf::timestamp arrived, caf::timestamp busy_until, caf::timestamp now, double seconds);

// The device edge's frame header (actors/transport/frame.hpp's
// frame_header_size, which asserts the two agree): schema/ sits below the
// transport, so the number is restated here rather than included.
inline constexpr uint64_t paced_frame_header_bytes = 24;

// One model-let exchange on a device's links: the request down, the answer
// up, each a frame (payload and the channel's frame header) paying the
// one-way latency. The device's compute is added by the caller.
double modellet_link_seconds(const device_profile& p, uint64_t request_payload_bytes,
                             uint64_t answer_payload_bytes);

}  // namespace cleave
