#include "actors/transport/admission.hpp"

#include <cstring>
#include <string>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <caf/error.hpp>
#include <caf/sec.hpp>

namespace cleave::transport {

namespace {

caf::error refuse(std::string why) {
  return caf::make_error(caf::sec::runtime_error, std::move(why));
}

}  // namespace

caf::expected<admission_key> make_admission_key() {
  admission_key k;
  if (RAND_bytes(k.bytes.data(), static_cast<int>(k.bytes.size())) != 1)
    return refuse("cannot draw an admission key from the random source");
  return k;
}

uint64_t bulk_ticket(const admission_key& key, int32_t device) {
  unsigned char msg[16] = {'c', 'l', 'e', 'a', 'v', 'e', '.', 'b', 'u', 'l', 'k', 0};
  for (int i = 0; i < 4; ++i) msg[12 + i] = static_cast<unsigned char>(static_cast<uint32_t>(device) >> (8 * i));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()), msg, sizeof(msg), mac,
       &len);
  uint64_t ticket = 0;
  for (int i = 0; i < 8; ++i) ticket |= static_cast<uint64_t>(mac[i]) << (8 * i);
  return ticket;
}

bool ticket_matches(const admission_key& key, int32_t device, uint64_t ticket) {
  const uint64_t want = bulk_ticket(key, device);
  return CRYPTO_memcmp(&want, &ticket, sizeof(want)) == 0;
}

bool same_secret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::array<char, device_hello_size> encode_device_hello(const device_hello& h) {
  std::array<char, device_hello_size> out{};
  const auto id = static_cast<uint32_t>(h.device);
  for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = static_cast<char>(id >> (8 * i));
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(4 + i)] = static_cast<char>(h.ticket >> (8 * i));
  return out;
}

caf::expected<device_hello> decode_device_hello(const char* data, size_t size) {
  if (size != device_hello_size)
    return refuse("device hello of " + std::to_string(size) + " bytes, expected "
                  + std::to_string(device_hello_size));
  auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(data[i])); };
  uint32_t id = 0;
  for (size_t i = 0; i < 4; ++i) id |= static_cast<uint32_t>(byte(i) << (8 * i));
  device_hello h;
  h.device = static_cast<int32_t>(id);
  for (size_t i = 0; i < 8; ++i) h.ticket |= byte(4 + i) << (8 * i);
  if (h.device < 0) return refuse("device hello names a negative id");
  return h;
}

}  // namespace cleave::transport
