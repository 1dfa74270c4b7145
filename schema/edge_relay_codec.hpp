#pragma once
// A relay's one connection to the ps's device edge (actors/relay). It opens
// with a hello that names the relay and declares its store and links; every
// frame after that belongs to one of its devices and travels as an
// edge_routed frame: the device's frame's payload, then a route saying whose
// frame it is (the relay's session for that device) and what it was (its
// kind and tag).
//
// The route is a trailer, not a header, so that either end adds it by
// appending to a buffer it owns and strips it by shrinking one: a task or a
// result of tens of megabytes is never moved to make room.
//
//   route (16 bytes, little-endian): u32 session, u16 kind, u16 flags, u64 tag
//
// The one flag, route_uncertified, goes with a join only: the device showed
// the relay no certificate, so its join must carry a token the ps redeems.
//
// A session is opened by its device's join and ends with a leave (from the
// relay: the device is gone) or an edge_closed (from the ps: the device is
// dropped; its payload is the reason, as a refusal's). Session 0 is no session.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "schema/edge_codec.hpp"
#include "schema/fleet_member.hpp"

namespace cleave {

struct edge_relay_hello_msg {
  uint32_t schema_version = message_schema_version;
  relay_seat seat;  // its name (unique in the job), its store and its links
};

std::vector<char> encode(const edge_relay_hello_msg& m);
// The seat is checked as a fleet file's relay is, and must have a name.
caf::expected<edge_relay_hello_msg> decode_relay_hello(const char* data, size_t size);

struct edge_route {
  uint32_t session = 0;
  uint16_t kind = 0;  // the device's frame's own kind
  uint64_t tag = 0;
  uint16_t flags = 0;
};

inline constexpr uint16_t route_uncertified = 1;

inline constexpr size_t edge_route_bytes = 16;

// Writes the route to out's edge_route_bytes bytes.
void write_route(const edge_route& r, char* out);
// Appends the route to a payload (one append; it may reallocate once).
void append_route(std::vector<char>& payload, const edge_route& r);
// Strips the route off a routed frame's payload, which is left as the
// device's frame's own. Refused: a payload shorter than a route, session 0,
// a kind that is not a device's frame (a route in a route, a hello), flags
// other than route_uncertified on a join, and a payload over its own kind's
// cap (edge_payload_cap with max_tile_bytes).
caf::expected<edge_route> take_route(std::vector<char>& payload, uint64_t max_tile_bytes);

}  // namespace cleave
