#pragma once
// Certificates made in the running job, for devices that join with a
// one-time token instead of a certificate issued by hand (deploy/ca.sh).
// The device makes its key and a certificate request; the ps, holding the
// job CA's key, checks the token and signs the request. Pure OpenSSL: no
// sockets, no actors.
//
// A certificate issued here is the same as `ca.sh issue NAME device`: EC
// P-256, client-only (extendedKeyUsage clientAuth), CN = the device's name,
// signed by the job's CA, so the ps's CRL can revoke it like any other.

#include <memory>
#include <string>

#include <caf/expected.hpp>

namespace cleave::transport {

struct key_and_request {
  std::string key_pem;  // the private key: keep it (mode 0600), never send it
  std::string csr_pem;  // the request to send with the join token
};

// A fresh EC P-256 key and a request for a certificate naming `name`
// (letters, digits, '.', '_', '-'; at most 64 characters).
caf::expected<key_and_request> make_key_and_request(const std::string& name);

// Signs requests with the job's CA. Immutable once loaded.
class certificate_issuer {
 public:
  // The CA's certificate and private key (ca.sh init's ca.pem and ca.key).
  static caf::expected<std::shared_ptr<const certificate_issuer>> load(const std::string& ca_cert,
                                                                       const std::string& ca_key);
  ~certificate_issuer();
  certificate_issuer(const certificate_issuer&) = delete;
  certificate_issuer& operator=(const certificate_issuer&) = delete;

  // A device certificate for the request, valid for `days`. Refuses a
  // request that is too long, malformed, not signed by its own key, not an
  // EC P-256 key, or whose name breaks the rule above.
  caf::expected<std::string> issue(const std::string& csr_pem, int days) const;

 private:
  struct impl;
  explicit certificate_issuer(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace cleave::transport
