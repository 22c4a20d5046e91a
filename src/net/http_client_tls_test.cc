// HttpClient over https against a TLS server run by the test, with a CA and
// server certificates the test makes (net/testing/tls_test_server.h): the
// exchange works when the server's chain leads to the client's CA and its
// certificate names the host; an unknown CA, another name, an IP the
// certificate does not list and a server that does not speak TLS all fail
// with Unavailable.
#include "net/http_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "net/testing/tls_test_server.h"

namespace omni {
namespace {

namespace fs = std::filesystem;
using testing::Cert;
using testing::TlsTestServer;

class HttpClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("http_client_tls_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ca_file_ = tls_.WriteCaFile(dir_.string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  StatusOr<HttpClientResponse> Get(HttpClient& client, const std::string& url, std::string connect_address = "") {
    return client.Request({.url = url, .timeout = std::chrono::seconds(10), .connect_address = connect_address});
  }

  fs::path dir_;
  testing::TlsFixture tls_;
  std::string ca_file_;
};

TEST_F(HttpClientTlsTest, AServerWhoseChainLeadsToTheCaAndNamesTheHostAnswers) {
  TlsTestServer server(tls_.server_cert.get(), tls_.server_key.get());
  HttpClient client({.ca_file = ca_file_});
  const std::string port = std::to_string(server.port());
  auto by_ip = Get(client, "https://127.0.0.1:" + port + "/x");
  ASSERT_TRUE(by_ip.ok()) << by_ip.status().ToString();
  EXPECT_EQ(by_ip->status, 200);
  EXPECT_EQ(by_ip->body, "hello over tls");
  // By name, connecting to the address a fetch policy checked.
  auto by_name = Get(client, "https://omniserve.test:" + port + "/x", "127.0.0.1");
  ASSERT_TRUE(by_name.ok()) << by_name.status().ToString();
  EXPECT_EQ(by_name->body, "hello over tls");
}

TEST_F(HttpClientTlsTest, AnUnknownCaAnotherNameOrAPlainServerFail) {
  TlsTestServer server(tls_.server_cert.get(), tls_.server_key.get());
  const std::string port = std::to_string(server.port());
  {
    HttpClient system_cas;  // the system's CAs do not know the test CA
    auto r = Get(system_cas, "https://127.0.0.1:" + port + "/x");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find("certificate verify failed"), std::string::npos) << r.status().message();
  }
  HttpClient client({.ca_file = ca_file_});
  auto other_name = Get(client, "https://other.test:" + port + "/x", "127.0.0.1");
  ASSERT_FALSE(other_name.ok());
  EXPECT_EQ(other_name.status().code(), StatusCode::kUnavailable);

  // A certificate that lists no IP: 127.0.0.1 is not its name.
  Cert named_only = testing::MakeCert(tls_.server_key.get(), "omniserve.test", tls_.ca.get(), tls_.ca_key.get(),
                                      "DNS:omniserve.test", false);
  TlsTestServer named(named_only.get(), tls_.server_key.get());
  auto by_ip = Get(client, "https://127.0.0.1:" + std::to_string(named.port()) + "/x");
  ASSERT_FALSE(by_ip.ok());
  EXPECT_EQ(by_ip.status().code(), StatusCode::kUnavailable);

  TlsTestServer plain(tls_.server_cert.get(), tls_.server_key.get(), /*tls=*/false);
  auto not_tls = Get(client, "https://127.0.0.1:" + std::to_string(plain.port()) + "/x");
  ASSERT_FALSE(not_tls.ok());
  EXPECT_EQ(not_tls.status().code(), StatusCode::kUnavailable);
}

TEST_F(HttpClientTlsTest, ACaFileThatDoesNotLoadFailsEveryHttpsExchangeWithTheReason) {
  HttpClient client({.ca_file = (dir_ / "missing.pem").string()});
  auto r = Get(client, "https://127.0.0.1:1/x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing.pem"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);  // ours, not the peer's
  EXPECT_EQ(client.tls_status().code(), StatusCode::kInternal);  // known at start
  EXPECT_TRUE(HttpClient({.ca_file = ca_file_}).tls_status().ok());
}

}  // namespace
}  // namespace omni
