#include "storage/url_fetch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <vector>
#include <string>

#include "net/http_server.h"
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
  EXPECT_EQ(FetchUrl(PathToFileUrl(dir_), {}, nullptr).status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(FetchUrl(PathToFileUrl(dir_ + "/fifo"), {}, nullptr).status().code(), StatusCode::kInvalidArgument);
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
    ASSERT_TRUE(server_->Start().ok());
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<HttpServer> server_;
  std::string base_;
  HttpClient client_;
  std::mutex mu_;
  std::string uploaded_;       // guarded by mu_
  std::string uploaded_type_;  // guarded by mu_
};

TEST_F(HttpFetchTest, FetchesAndMapsErrors) {
  EXPECT_EQ(*FetchUrl(base_ + "/obj?X-Amz-Signature=abc", {}, &client_), "object bytes");
  EXPECT_EQ(FetchUrl(base_ + "/chunked", {}, &client_)->size(), 4000u);

  auto expired = FetchUrl(base_ + "/expired?X-Amz-Signature=secretsig", {}, &client_);
  EXPECT_EQ(expired.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(expired.status().message().find("AccessDenied (Request has expired)"), std::string::npos)
      << expired.status().message();
  EXPECT_EQ(expired.status().message().find("secretsig"), std::string::npos);  // signatures stay out of messages

  EXPECT_EQ(FetchUrl(base_ + "/missing", {}, &client_).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FetchUrl(base_ + "/broken", {}, &client_).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(FetchUrl("https://127.0.0.1/x", {}, &client_).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(FetchUrl(base_ + "/obj", {}, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HttpFetchTest, RefusesBodiesOverTheLimit) {
  auto big = FetchUrl(base_ + "/big", {.max_bytes = 1 << 20}, &client_);
  EXPECT_EQ(big.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(big.status().message().find("is 2097152 bytes, over the limit of 1048576 bytes"), std::string::npos)
      << big.status().message();
  auto chunked = FetchUrl(base_ + "/chunked", {.max_bytes = 2500}, &client_);  // no content-length
  EXPECT_EQ(chunked.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_EQ(FetchUrl(base_ + "/big", {.max_bytes = 2 << 20}, &client_)->size(), 2u << 20);
  // The client is still usable after aborted transfers.
  EXPECT_EQ(*FetchUrl(base_ + "/obj", {}, &client_), "object bytes");
}

TEST_F(HttpFetchTest, PutsToPresignedUrls) {
  ASSERT_TRUE(PutToUrl(base_ + "/upload?sig=1", "payload", {.content_type = "application/x-test"}, &client_).ok());
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(uploaded_, "payload");
    EXPECT_EQ(uploaded_type_, "application/x-test");
  }
  EXPECT_EQ(PutToUrl(base_ + "/denied", "x", {}, &client_).code(), StatusCode::kPermissionDenied);
}

TEST_F(HttpFetchTest, ConnectionFailureIsTransient) {
  uint16_t port = server_->port();
  server_->Shutdown();
  auto r = FetchUrl("http://127.0.0.1:" + std::to_string(port) + "/obj", {}, &client_);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

}  // namespace
}  // namespace omni
