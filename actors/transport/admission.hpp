#pragma once
// Proof that a bulk connection belongs to a device the planner admitted.
// The planner hands every joining device a ticket, HMAC-SHA256(key, id) cut
// to 64 bits; the PS's bulk gateway holds the same key and binds a
// connection to a device id only when its hello carries that id's ticket.
// Without it any peer that reaches the bulk port could claim a device's id
// and answer its tiles.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/expected.hpp>

namespace cleave::transport {

struct admission_key {
  std::array<unsigned char, 32> bytes{};
};

// A fresh key from the operating system's random source.
caf::expected<admission_key> make_admission_key();

uint64_t bulk_ticket(const admission_key& key, int32_t device);
// Compares in constant time.
bool ticket_matches(const admission_key& key, int32_t device, uint64_t ticket);

// Whether two secrets are equal, in time that depends only on their lengths.
bool same_secret(const std::string& a, const std::string& b);

// The first frame a device sends on its bulk connection: id and ticket,
// little-endian.
inline constexpr size_t device_hello_size = 12;
struct device_hello {
  int32_t device = -1;
  uint64_t ticket = 0;
};
std::array<char, device_hello_size> encode_device_hello(const device_hello& h);
caf::expected<device_hello> decode_device_hello(const char* data, size_t size);

}  // namespace cleave::transport
