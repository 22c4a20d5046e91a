// Test support for https: a CA and server certificates made with OpenSSL,
// and a TLS server on 127.0.0.1 that answers every connection's first
// request with 200 "hello over tls" (or, plain, the same in clear text to
// whatever the client sent first). For tests only.
//
//   TlsFixture tls;                       // a CA, and a server certificate for
//                                         // omniserve.test and 127.0.0.1
//   TlsTestServer server(tls.server_cert.get(), tls.server_key.get());
//   HttpClient client({.ca_file = tls.WriteCaFile(dir)});
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

namespace omni::testing {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

Key NewKey();  // P-256
// A certificate for `key` named `cn`, signed by `issuer_key` (self-signed
// when `issuer` is null), valid for a day; `san`: "DNS:a,IP:1.2.3.4" or null.
Cert MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key, const char* san, bool ca);
std::string Pem(X509* cert);

struct TlsFixture {
  TlsFixture();
  // Writes the CA certificate (PEM) to DIR/ca.pem and returns the path.
  std::string WriteCaFile(const std::string& dir) const;

  Key ca_key, server_key;
  Cert ca, server_cert;  // server_cert: DNS:omniserve.test, IP:127.0.0.1
};

class TlsTestServer {
 public:
  TlsTestServer(X509* cert, EVP_PKEY* key, bool tls = true);
  ~TlsTestServer();
  uint16_t port() const;

 private:
  void Serve();

  bool tls_;
  boost::asio::io_context ioc_;
  boost::asio::ssl::context ssl_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace omni::testing
