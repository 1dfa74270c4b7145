#pragma once
// OpenSSL objects owned by unique_ptr, each freed by its own function: the
// one way the transport's TLS and certificate code hold them.

#include <memory>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace cleave::transport {

template <class T, void (*Free)(T*)>
struct ossl_deleter {
  void operator()(T* p) const { Free(p); }
};

using x509_ptr = std::unique_ptr<X509, ossl_deleter<X509, X509_free>>;
using crl_ptr = std::unique_ptr<X509_CRL, ossl_deleter<X509_CRL, X509_CRL_free>>;
using ctx_ptr = std::unique_ptr<SSL_CTX, ossl_deleter<SSL_CTX, SSL_CTX_free>>;
using store_ctx_ptr = std::unique_ptr<X509_STORE_CTX, ossl_deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, ossl_deleter<EVP_PKEY, EVP_PKEY_free>>;
using req_ptr = std::unique_ptr<X509_REQ, ossl_deleter<X509_REQ, X509_REQ_free>>;
using bio_ptr = std::unique_ptr<BIO, ossl_deleter<BIO, BIO_free_all>>;

}  // namespace cleave::transport
