// What a device without a certificate sends to enrol: its join token, checked
// against the ps's token file (whose text is fuzzed too), and its certificate
// request, which the ps parses and signs (actors/transport/certificates.hpp).
// The first byte picks which. The CA comes from CLEAVE_FUZZ_CA (run.sh makes
// one with deploy/ca.sh).
#include <cstdlib>
#include <string>

#include "actors/gateway/join_tokens.hpp"
#include "actors/transport/certificates.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

namespace {
std::shared_ptr<const transport::certificate_issuer> issuer;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("CLEAVE_FUZZ_CA");
  FUZZ_CHECK(dir != nullptr);
  auto loaded = transport::certificate_issuer::load(std::string{dir} + "/ca.pem", std::string{dir} + "/ca.key");
  FUZZ_CHECK(loaded);
  issuer = *loaded;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto tokens = join_tokens::parse(text, "/nonexistent/tokens");
    if (tokens) FUZZ_CHECK(tokens->left() <= text.size() / 16);
    return 0;
  }
  auto cert = issuer->issue(text, 1);
  if (cert) FUZZ_CHECK(cert->rfind("-----BEGIN CERTIFICATE-----", 0) == 0);
  return 0;
}
