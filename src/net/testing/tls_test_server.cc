#include "net/testing/tls_test_server.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <stdexcept>

#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

namespace omni::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error(std::string("bad certificate extension ") + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

}  // namespace

Key NewKey() { return Key(EVP_EC_gen("P-256")); }

Cert MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key, const char* san, bool ca) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  static std::atomic<long> serial{1};
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  AddExtension(cert.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  if (ca) AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  if (san != nullptr) AddExtension(cert.get(), signer, NID_subject_alt_name, san);
  X509_sign(cert.get(), issuer_key, EVP_sha256());
  return cert;
}

std::string Pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

TlsFixture::TlsFixture() {
  ca_key = NewKey();
  ca = MakeCert(ca_key.get(), "omniserve test CA", nullptr, ca_key.get(), nullptr, /*ca=*/true);
  server_key = NewKey();
  server_cert = MakeCert(server_key.get(), "omniserve.test", ca.get(), ca_key.get(), "DNS:omniserve.test,IP:127.0.0.1",
                         /*ca=*/false);
}

std::string TlsFixture::WriteCaFile(const std::string& dir) const {
  const std::string path = dir + "/ca.pem";
  std::ofstream(path) << Pem(ca.get());
  return path;
}

TlsTestServer::TlsTestServer(X509* cert, EVP_PKEY* key, bool tls)
    : tls_(tls),
      ssl_(asio::ssl::context::tls_server),
      acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  SSL_CTX_use_certificate(ssl_.native_handle(), cert);
  SSL_CTX_use_PrivateKey(ssl_.native_handle(), key);
  thread_ = std::thread([this] { Serve(); });
}

TlsTestServer::~TlsTestServer() {
  stopping_ = true;
  boost::system::error_code ec;
  tcp::socket poke(ioc_);
  poke.connect(acceptor_.local_endpoint(), ec);  // wakes accept()
  thread_.join();
}

uint16_t TlsTestServer::port() const { return acceptor_.local_endpoint().port(); }

void TlsTestServer::Serve() {
  const std::string answer = "HTTP/1.1 200 OK\r\ncontent-length: 14\r\nconnection: close\r\n\r\nhello over tls";
  while (!stopping_) {
    tcp::socket socket(ioc_);
    boost::system::error_code ec;
    acceptor_.accept(socket, ec);
    if (ec || stopping_) return;
    if (!tls_) {  // answers whatever came first (a ClientHello) in plain HTTP
      char hello[512];
      socket.read_some(asio::buffer(hello), ec);
      if (!ec) asio::write(socket, asio::buffer(answer), ec);
      continue;
    }
    asio::ssl::stream<tcp::socket> stream(std::move(socket), ssl_);
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (ec) continue;  // the client refused us
    asio::streambuf request;
    asio::read_until(stream, request, "\r\n\r\n", ec);
    if (!ec) asio::write(stream, asio::buffer(answer), ec);
    stream.shutdown(ec);
  }
}

}  // namespace omni::testing
