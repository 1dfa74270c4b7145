#include "actors/transport/certificates.hpp"

#include <cstdio>
#include <regex>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "actors/transport/openssl_handles.hpp"
#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"

namespace cleave::transport {

namespace {

std::string openssl_error() {
  char buf[256] = {0};
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

bool valid_name(const std::string& name) {
  static const std::regex rule{"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"};
  return std::regex_match(name, rule);
}

template <class Write>
caf::expected<std::string> to_pem(Write write) {
  bio_ptr mem{BIO_new(BIO_s_mem())};
  if (!mem || write(mem.get()) != 1) return fail("cannot encode PEM: " + openssl_error());
  char* data = nullptr;
  const long n = BIO_get_mem_data(mem.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

bio_ptr read_only(const std::string& text) {
  return bio_ptr{BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
}

std::string common_name(X509_NAME* subject) {
  char cn[128] = {0};
  if (X509_NAME_get_text_by_NID(subject, NID_commonName, cn, sizeof(cn)) <= 0) return {};
  return cn;
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

}  // namespace

caf::expected<key_and_request> make_key_and_request(const std::string& name) {
  if (!valid_name(name))
    return fail("bad device name '" + name + "': letters, digits, '.', '_' and '-', at most 64");
  pkey_ptr key{EVP_EC_gen("P-256")};
  if (!key) return fail("cannot make a key: " + openssl_error());
  req_ptr req{X509_REQ_new()};
  X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  if (!req || X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_ASC,
                                         reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0) != 1
      || X509_REQ_set_pubkey(req.get(), key.get()) != 1 || X509_REQ_sign(req.get(), key.get(), EVP_sha256()) <= 0)
    return fail("cannot make a certificate request: " + openssl_error());
  auto key_pem = to_pem([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  auto csr_pem = to_pem([&](BIO* b) { return PEM_write_bio_X509_REQ(b, req.get()); });
  if (!key_pem) return key_pem.error();
  if (!csr_pem) return csr_pem.error();
  return key_and_request{std::move(*key_pem), std::move(*csr_pem)};
}

struct certificate_issuer::impl {
  x509_ptr cert;
  pkey_ptr key;
};

certificate_issuer::certificate_issuer(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
certificate_issuer::~certificate_issuer() = default;

caf::expected<std::shared_ptr<const certificate_issuer>> certificate_issuer::load(const std::string& ca_cert,
                                                                                   const std::string& ca_key) {
  auto p = std::make_unique<impl>();
  if (FILE* f = std::fopen(ca_cert.c_str(), "r")) {
    p->cert.reset(PEM_read_X509(f, nullptr, nullptr, nullptr));
    std::fclose(f);
  }
  if (!p->cert) return fail("cannot read the CA certificate " + ca_cert);
  if (FILE* f = std::fopen(ca_key.c_str(), "r")) {
    p->key.reset(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
    std::fclose(f);
  }
  if (!p->key) return fail("cannot read the CA key " + ca_key);
  if (X509_check_private_key(p->cert.get(), p->key.get()) != 1)
    return fail("the CA key " + ca_key + " does not belong to " + ca_cert);
  ERR_clear_error();
  return std::shared_ptr<const certificate_issuer>{new certificate_issuer(std::move(p))};
}

caf::expected<std::string> certificate_issuer::issue(const std::string& csr_pem, int days) const {
  if (csr_pem.empty() || csr_pem.size() > max_request_bytes) return fail("no certificate request, or one too long");
  auto in = read_only(csr_pem);
  req_ptr req{PEM_read_bio_X509_REQ(in.get(), nullptr, nullptr, nullptr)};
  if (!req) return fail("a malformed certificate request");
  pkey_ptr pub{X509_REQ_get_pubkey(req.get())};
  if (!pub || X509_REQ_verify(req.get(), pub.get()) != 1) {
    ERR_clear_error();
    return fail("a certificate request not signed by its own key");
  }
  char group[32] = {0};
  size_t len = 0;
  if (EVP_PKEY_get_group_name(pub.get(), group, sizeof(group), &len) != 1 || std::string{group} != "prime256v1")
    return fail("a certificate request for a key other than EC P-256");
  const std::string name = common_name(X509_REQ_get_subject_name(req.get()));
  if (!valid_name(name)) return fail("a certificate request with a bad name '" + name + "'");
  x509_ptr cert{X509_new()};
  unsigned char serial[16];
  if (!cert || RAND_bytes(serial, sizeof(serial)) != 1) return fail("cannot make a certificate: " + openssl_error());
  serial[0] &= 0x7f;  // a positive serial
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  ASN1_INTEGER* sn = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_NAME* subject = X509_NAME_new();
  X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  const bool ok = sn != nullptr && X509_set_version(cert.get(), 2) == 1
                  && X509_set_subject_name(cert.get(), subject) == 1
                  && X509_set_issuer_name(cert.get(), X509_get_subject_name(impl_->cert.get())) == 1
                  && X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300) != nullptr
                  && X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400L * days) != nullptr
                  && X509_set_pubkey(cert.get(), pub.get()) == 1
                  && add_extension(cert.get(), impl_->cert.get(), NID_basic_constraints, "critical,CA:FALSE")
                  && add_extension(cert.get(), impl_->cert.get(), NID_key_usage, "critical,digitalSignature")
                  && add_extension(cert.get(), impl_->cert.get(), NID_ext_key_usage, "clientAuth")
                  && add_extension(cert.get(), impl_->cert.get(), NID_subject_key_identifier, "hash")
                  && add_extension(cert.get(), impl_->cert.get(), NID_authority_key_identifier, "keyid")
                  && X509_sign(cert.get(), impl_->key.get(), EVP_sha256()) > 0;
  X509_NAME_free(subject);
  if (!ok) return fail("cannot sign the certificate: " + openssl_error());
  return to_pem([&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); });
}

}  // namespace cleave::transport
