#include "schema/job_proof.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "schema/atomic_file.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr const char* token_prefix = "job:";
// Binds the proof to its purpose: the same secret could never be made to
// vouch for anything but a device id on a shard's edge.
constexpr const char* proof_context = "cleave shard edge v1 device ";

std::string hex(const unsigned char* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

}  // namespace

caf::expected<std::string> make_job_secret() {
  std::string secret(job_secret_bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()), static_cast<int>(secret.size())) != 1)
    return fail("cannot draw the job's secret from the OS's generator");
  return secret;
}

caf::expected<std::string> kept_job_secret(const std::string& dir, bool resume) {
  const std::string path = dir + "/job-secret";
  std::error_code ec;
  if (resume && std::filesystem::exists(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    char text[2 * job_secret_bytes + 2] = {};
    in.read(text, sizeof(text));  // no more than a secret and its newline: the file may be anything
    const auto n = static_cast<size_t>(in.gcount());
    const size_t digits = n > 0 && text[n - 1] == '\n' ? n - 1 : n;
    auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    std::string secret(job_secret_bytes, '\0');
    bool ok = digits == 2 * job_secret_bytes;
    for (size_t i = 0; ok && i < job_secret_bytes; ++i) {
      const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
      ok = hi >= 0 && lo >= 0;
      secret[i] = static_cast<char>(hi * 16 + lo);
    }
    if (!ok) return fail(path + " does not hold a job's secret (" + std::to_string(2 * job_secret_bytes) + " hex digits)");
    return secret;
  }
  auto secret = make_job_secret();
  if (!secret) return secret;
  const std::string text = hex(reinterpret_cast<const unsigned char*>(secret->data()), secret->size()) + "\n";
  const mode_t old_mask = ::umask(077);
  auto err = write_file_atomically(path, {text}, "job secret");
  ::umask(old_mask);
  if (err) return err;
  return secret;
}

std::string prove_device(const std::string& secret, int32_t device) {
  const std::string message = proof_context + std::to_string(device);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  return hex(mac, len);
}

caf::expected<int32_t> check_job_token(const std::string& secret, const std::string& token) {
  if (secret.empty()) return fail("this shard has no job yet: its coordinator has not attached it");
  const std::string prefix = token_prefix;
  const auto colon = token.find(':', prefix.size());
  if (token.rfind(prefix, 0) != 0 || colon == std::string::npos || colon == prefix.size() || colon - prefix.size() > 10)
    return fail("no proof that this job's planner welcomed the device (a shard's edge admits only them)");
  int64_t id = 0;
  for (size_t i = prefix.size(); i < colon; ++i) {
    if (token[i] < '0' || token[i] > '9') return fail("a malformed device id in the job's proof");
    id = id * 10 + (token[i] - '0');
  }
  if (id > INT32_MAX) return fail("a malformed device id in the job's proof");
  const std::string want = prove_device(secret, static_cast<int32_t>(id));
  const std::string got = token.substr(colon + 1);
  if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0)
    return fail("a proof this job's planner did not give (another job's, or forged)");
  return static_cast<int32_t>(id);
}

}  // namespace cleave
