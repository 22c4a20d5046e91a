#include "storage/url_fetch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include <string>

#include "net/http_server.h"
#include "net/testing/tls_test_server.h"
#include "storage/fs_io.h"
#include "storage/fs_store.h"

namespace omni {
namespace {

namespace fs = std::filesystem;

class FileUrlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "url_fetch_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_;
};

TEST_F(FileUrlTest, FetchesARegularFile) {
  std::ofstream(dir_ + "/a b%.bin", std::ios::binary) << std::string("bytes\0here", 10);
  std::string url = PathToFileUrl(dir_ + "/a b%.bin");
  EXPECT_NE(url.find("a%20b%25.bin"), std::string::npos);
  auto got = FetchUrl(url, {}, nullptr);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, std::string("bytes\0here", 10));
  EXPECT_EQ(*FetchUrl("file://localhost" + PathToFileUrl(dir_ + "/a b%.bin").substr(7), {}, nullptr),
            std::string("bytes\0here", 10));
}

TEST_F(FileUrlTest, EnforcesTheLimitAndFileKind) {
  std::ofstream(dir_ + "/ten", std::ios::binary) << "0123456789";
  auto over = FetchUrl(PathToFileUrl(dir_ + "/ten"), {.max_bytes = 9}, nullptr);
  EXPECT_EQ(over.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(over.status().message().find("is 10 bytes, over the limit of 9 bytes"), std::string::npos)
      << over.status().message();
  EXPECT_TRUE(FetchUrl(PathToFileUrl(dir_ + "/ten"), {.max_bytes = 10}, nullptr).ok());
  EXPECT_EQ(FetchUrl(PathToFileUrl(dir_), {}, nullptr).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(FetchUrl(PathToFileUrl(dir_ + "/fifo"), {}, nullptr).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(FetchUrl(PathToFileUrl(dir_ + "/missing"), {}, nullptr).status().code(), StatusCode::kNotFound);
}

TEST_F(FileUrlTest, RejectsMalformedUrls) {
  for (const std::string& bad : std::vector<std::string>{"file://host/x", "file:relative", "file://" + dir_ + "/%zz", "file://" + dir_ + "/%00x",
                          "file://" + dir_ + "/x?q=1", "file://" + dir_ + "/x#frag", "ftp://x/y", "x"}) {
    EXPECT_EQ(FetchUrl(bad, {}, nullptr).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(FileUrlTest, PutReplacesAtomicallyAndDropsTheStaleSidecar) {
  auto store = FsStore::Open(PathToFileUrl(dir_ + "/store"), {.sync = false});
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Put("obj", "old", {.content_type = "text/plain", .metadata = {{"k", "v"}}}).ok());
  auto url = (*store)->Presign("obj", PresignMethod::kPut, std::chrono::seconds(60));
  ASSERT_TRUE(url.ok());
  ASSERT_TRUE(PutToUrl(*url, "new bytes", {}, nullptr).ok());
  EXPECT_EQ(*(*store)->Get("obj"), "new bytes");
  auto info = (*store)->Head("obj");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->content_type, "application/octet-stream");
  EXPECT_TRUE(info->metadata.empty());
  size_t reserved = 0;
  for (const auto& entry : fs::directory_iterator(dir_ + "/store")) {
    if (entry.path().filename().string().find('#') != std::string::npos) ++reserved;
  }
  EXPECT_EQ(reserved, 0u);  // no temporary, no stale sidecar
  EXPECT_EQ(PutToUrl(PathToFileUrl(dir_ + "/no/such/dir/x"), "x", {}, nullptr).code(), StatusCode::kNotFound);
  EXPECT_EQ(PutToUrl(PathToFileUrl(dir_ + "/a#1"), "x", {}, nullptr).code(), StatusCode::kInvalidArgument);
}

// A server standing in for S3 answering presigned-URL requests.
class HttpFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.access_log = false;
    server_ = std::make_unique<HttpServer>(options);
    server_->Route(HttpMethod::kGet, "/obj", [](const HttpRequest&) {
      return HttpResponse{.status = 200, .body = "object bytes"};
    });
    server_->Route(HttpMethod::kGet, "/big", [](const HttpRequest&) {
      return HttpResponse{.status = 200, .body = std::string(2 << 20, 'b')};
    });
    server_->RouteStreaming(HttpMethod::kGet, "/chunked", [](HttpRequest, std::shared_ptr<ResponseWriter> w) {
      w->StartStream(200, {});
      for (int i = 0; i < 4; ++i) w->Write(std::string(1000, 'c'));
      w->Finish();
    });
    server_->Route(HttpMethod::kGet, "/expired", [](const HttpRequest&) {
      return HttpResponse{.status = 403,
                          .body = "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"};
    });
    server_->Route(HttpMethod::kGet, "/missing", [](const HttpRequest&) { return HttpResponse{.status = 404}; });
    server_->Route(HttpMethod::kGet, "/broken", [](const HttpRequest&) { return HttpResponse{.status = 503}; });
    server_->Route(HttpMethod::kPut, "/upload", [this](const HttpRequest& r) {
      std::lock_guard lock(mu_);
      uploaded_ = r.body;
      uploaded_type_ = std::string(r.headers.GetOr("content-type", ""));
      return HttpResponse{.status = 200};
    });
    server_->Route(HttpMethod::kPut, "/denied", [](const HttpRequest&) { return HttpResponse{.status = 403}; });
    server_->Route(HttpMethod::kGet, "/leaky", [](const HttpRequest&) {
      return HttpResponse{.status = 500, .body = "root:x:0:0:root:/root:/bin/bash"};
    });
    server_->Route(HttpMethod::kGet, "/host", [](const HttpRequest& r) {
      return HttpResponse{.status = 200, .body = std::string(r.headers.GetOr("host", ""))};
    });
    // /to?u=URL answers 302 to URL (a relative or absolute Location).
    server_->Route(HttpMethod::kGet, "/to", [](const HttpRequest& r) {
      HttpResponse response{.status = 302, .body = "redirect body"};
      for (const auto& [name, value] : r.query) {
        if (name == "u") response.headers.Set("location", value);
      }
      return response;
    });
    server_->Route(HttpMethod::kGet, "/dir/loop", [](const HttpRequest&) {
      HttpResponse response{.status = 307};
      response.headers.Set("location", "loop");
      return response;
    });
    ASSERT_TRUE(server_->Start().ok());
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { server_->Shutdown(); }

  // The test server is on loopback, which the default policy refuses.
  FetchOptions Loopback() const { return {.policy = {.allow_loopback = true}}; }

  std::unique_ptr<HttpServer> server_;
  std::string base_;
  HttpClient client_;
  std::mutex mu_;
  std::string uploaded_;       // guarded by mu_
  std::string uploaded_type_;  // guarded by mu_
};

TEST_F(HttpFetchTest, FetchesAndMapsErrors) {
  EXPECT_EQ(*FetchUrl(base_ + "/obj?X-Amz-Signature=abc", Loopback(), &client_), "object bytes");
  EXPECT_EQ(FetchUrl(base_ + "/chunked", Loopback(), &client_)->size(), 4000u);

  auto expired = FetchUrl(base_ + "/expired?X-Amz-Signature=secretsig", Loopback(), &client_);
  EXPECT_EQ(expired.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(expired.status().message(),
            "could not fetch " + base_ + "/expired?...: the server answered HTTP 403; the URL may have expired or "
            "been altered");  // no signature, and no byte of the answer's body

  EXPECT_EQ(FetchUrl(base_ + "/missing", Loopback(), &client_).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FetchUrl(base_ + "/broken", Loopback(), &client_).status().code(), StatusCode::kUnavailable);
  // Nothing listens on 443 here: an https URL is fetched, and fails as any
  // address that does not answer.
  EXPECT_EQ(FetchUrl("https://127.0.0.1/x", Loopback(), &client_).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(FetchUrl(base_ + "/obj", Loopback(), nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HttpFetchTest, RefusesBodiesOverTheLimit) {
  auto big = FetchUrl(base_ + "/big", {.max_bytes = 1 << 20, .policy = {.allow_loopback = true}}, &client_);
  EXPECT_EQ(big.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(big.status().message().find("is 2097152 bytes, over the limit of 1048576 bytes"), std::string::npos)
      << big.status().message();
  auto chunked = FetchUrl(base_ + "/chunked", {.max_bytes = 2500, .policy = {.allow_loopback = true}}, &client_);  // no content-length
  EXPECT_EQ(chunked.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_EQ(FetchUrl(base_ + "/big", {.max_bytes = 2 << 20, .policy = {.allow_loopback = true}}, &client_)->size(), 2u << 20);
  // The client is still usable after aborted transfers.
  EXPECT_EQ(*FetchUrl(base_ + "/obj", Loopback(), &client_), "object bytes");
}

TEST_F(HttpFetchTest, PutsToPresignedUrls) {
  ASSERT_TRUE(PutToUrl(base_ + "/upload?sig=1", "payload",
                       {.content_type = "application/x-test", .policy = {.allow_loopback = true}}, &client_).ok());
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(uploaded_, "payload");
    EXPECT_EQ(uploaded_type_, "application/x-test");
  }
  EXPECT_EQ(PutToUrl(base_ + "/denied", "x", {.policy = {.allow_loopback = true}}, &client_).code(), StatusCode::kPermissionDenied);
}

TEST_F(HttpFetchTest, ErrorsNeverQuoteTheResponseBody) {
  auto leaky = FetchUrl(base_ + "/leaky", Loopback(), &client_);
  EXPECT_EQ(leaky.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(leaky.status().message(), "could not fetch " + base_ + "/leaky: the server answered HTTP 500");
}

TEST_F(HttpFetchTest, FollowsRedirectsCheckingEveryHop) {
  EXPECT_EQ(*FetchUrl(base_ + "/to?u=/obj", Loopback(), &client_), "object bytes");
  EXPECT_EQ(*FetchUrl(base_ + "/to?u=" + base_ + "/obj", Loopback(), &client_), "object bytes");
  EXPECT_EQ(*FetchUrl(base_ + "/to?u=obj", Loopback(), &client_), "object bytes");
  // Three redirects are followed, a fourth is not.
  EXPECT_EQ(*FetchUrl(base_ + "/to?u=/to%3Fu%3D/to%253Fu%253D/obj", Loopback(), &client_), "object bytes");
  auto loop = FetchUrl(base_ + "/dir/loop", Loopback(), &client_);
  EXPECT_EQ(loop.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(loop.status().message(), "could not fetch " + base_ + "/dir/loop: more than 3 redirects");
  // A hop to an address the policy refuses is never connected to.
  auto metadata = FetchUrl(base_ + "/to?u=http://169.254.169.254/latest/meta-data/", Loopback(), &client_);
  EXPECT_EQ(metadata.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(metadata.status().message(),
            "fetching " + base_ + "/to?... is not allowed: it redirects to http://169.254.169.254/latest/meta-data/: "
            "the address 169.254.169.254 is link-local (allow it with --fetch-allow CIDR)");
  for (const std::string& to : {"file:///etc/passwd", "http://[::ffff:10.0.0.1]/", "https://10.0.0.1/"}) {
    auto r = FetchUrl(base_ + "/to?u=" + to, Loopback(), &client_);
    EXPECT_FALSE(r.ok()) << to;
    EXPECT_NE(r.status().message().find("it redirects to"), std::string::npos) << r.status().message();
  }
  // Allowed only as this one address: a redirect to another loopback
  // address is refused.
  FetchOptions one{.policy = {.allow = {*IpCidr::Parse("127.0.0.1/32")}}};
  EXPECT_EQ(*FetchUrl(base_ + "/obj", one, &client_), "object bytes");
  std::string other = "http://127.0.0.2:" + std::to_string(server_->port()) + "/obj";
  EXPECT_EQ(FetchUrl(base_ + "/to?u=" + other, one, &client_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HttpFetchTest, ConnectsToTheCheckedAddressAndSendsTheHostName) {
  // The name resolves (once, in the policy) to the test server: the
  // connection goes to that address, the Host header names the host.
  FetchOptions options{.policy = {.allow_loopback = true,
                                  .resolver = [](const std::string&, std::chrono::milliseconds) {
                                    return StatusOr<std::vector<IpAddress>>(
                                        std::vector<IpAddress>{*IpAddress::Parse("127.0.0.1")});
                                  }}};
  std::string port = std::to_string(server_->port());
  EXPECT_EQ(*FetchUrl("http://store.test:" + port + "/host", options, &client_), "store.test:" + port);
}

// A TCP listener on loopback that answers every connection with bytes that
// are not HTTP and closes it.
class NotHttpListener {
 public:
  NotHttpListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    OMNI_CHECK(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    OMNI_CHECK(::listen(fd_, 8) == 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        const char banner[] = "SSH-2.0-OpenSSH_9.2 secret-banner\r\n";
        (void)!::write(c, banner, sizeof(banner) - 1);
        ::close(c);
      }
    });
  }
  ~NotHttpListener() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

// What a port scan through the fetcher learns: for a refused address,
// nothing (no connection is made); for an allowed one, not whether a port
// is closed or open with another protocol on it.
TEST_F(HttpFetchTest, OpenAndClosedPortsLookAlike) {
  NotHttpListener not_http;
  uint16_t open_port = server_->port();
  uint16_t closed_port = [] {
    NotHttpListener gone;
    return gone.port();
  }();
  auto message = [&](uint16_t port, const FetchOptions& options) {
    StatusOr<std::string> r = FetchUrl("http://127.0.0.1:" + std::to_string(port) + "/obj", options, &client_);
    EXPECT_FALSE(r.ok());
    std::string text = std::string(StatusCodeName(r.status().code())) + " " + r.status().message();
    size_t at = text.find(std::to_string(port));
    while (at != std::string::npos) {
      text.replace(at, std::to_string(port).size(), "PORT");
      at = text.find(std::to_string(port));
    }
    return text;
  };
  FetchOptions strict;
  uint64_t before = client_.connections_opened();
  EXPECT_EQ(message(open_port, strict), message(closed_port, strict));
  EXPECT_EQ(message(not_http.port(), strict), message(closed_port, strict));
  EXPECT_EQ(client_.connections_opened(), before);  // refused addresses are never connected to
  EXPECT_NE(message(open_port, strict).find("is loopback"), std::string::npos);

  FetchOptions allowed = Loopback();
  EXPECT_EQ(message(not_http.port(), allowed), message(closed_port, allowed));
  EXPECT_EQ(message(closed_port, allowed),
            "unavailable could not fetch http://127.0.0.1:PORT/obj: no valid HTTP response from 127.0.0.1:PORT");
}

TEST_F(HttpFetchTest, ConnectionFailureIsTransient) {
  uint16_t port = server_->port();
  server_->Shutdown();
  auto r = FetchUrl("http://127.0.0.1:" + std::to_string(port) + "/obj", Loopback(), &client_);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

// https through the fetch policy: the policy's address is the one connected
// to, the certificate is checked against the URL's host, and a redirect from
// http to https is followed (and re-checked) like any other.
TEST_F(HttpFetchTest, HttpsUrlsAreFetchedWithTheServersCertificateVerified) {
  testing::TlsFixture tls;
  testing::TlsTestServer server(tls.server_cert.get(), tls.server_key.get());
  const std::string dir = ::testing::TempDir();
  HttpClient verified({.ca_file = tls.WriteCaFile(dir)});
  const std::string url = "https://127.0.0.1:" + std::to_string(server.port()) + "/object";
  auto fetched = FetchUrl(url, Loopback(), &verified);
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_EQ(*fetched, "hello over tls");
  EXPECT_EQ(*FetchUrl(base_ + "/to?u=" + url, Loopback(), &verified), "hello over tls");
  // The same server to a client that does not trust its CA.
  EXPECT_EQ(FetchUrl(url, Loopback(), &client_).status().code(), StatusCode::kUnavailable);
  // And https to loopback is refused unless loopback is allowed, as http is.
  EXPECT_EQ(FetchUrl(url, {}, &verified).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omni
