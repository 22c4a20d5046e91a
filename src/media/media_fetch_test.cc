#include "media/media_fetch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <vector>

#include <unistd.h>

#include "media/media_test_util.h"
#include "net/http_server.h"
#include "storage/content_hash.h"
#include "core/base64.h"
#include "storage/fs_io.h"

namespace omni::media {
namespace {

namespace fs = std::filesystem;

TEST(MediaFetcher, DataUrlIsSniffedAndHashed) {
  MediaFetcher fetcher({}, nullptr);
  // sha256("abc"), FIPS 180-2 appendix B.1.
  auto abc = fetcher.Fetch("data:image/jpeg;base64,YWJj");
  ASSERT_TRUE(abc.ok()) << abc.status().ToString();
  EXPECT_EQ(abc->sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(abc->kind, MediaKind::kUnknown);  // the claimed image/jpeg does not count
  EXPECT_EQ(abc->claimed_type, "image/jpeg");
  const std::string png = ReadTestFile("rgb.png");
  auto image = fetcher.Fetch("data:application/octet-stream;base64," + Base64Encode(png));
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->kind, MediaKind::kPng);
  EXPECT_EQ(image->bytes, png);
}

TEST(MediaFetcher, FileUrlsOnlyBeneathAConfiguredRoot) {
  const fs::path dir = fs::temp_directory_path() / ("media_fetch_test." + std::to_string(::getpid()));
  fs::create_directories(dir / "root");
  std::ofstream(dir / "root" / "a.gif", std::ios::binary) << ReadTestFile("transparent.gif");
  std::ofstream(dir / "secret", std::ios::binary) << "secret";
  const std::string inside = PathToFileUrl((dir / "root" / "a.gif").string());
  EXPECT_EQ(MediaFetcher({}, nullptr).Fetch(inside).status().code(), StatusCode::kInvalidArgument);
  MediaFetcher rooted({.file_root = (dir / "root").string()}, nullptr);
  auto ok = rooted.Fetch(inside);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->kind, MediaKind::kGif);
  auto outside = rooted.Fetch(PathToFileUrl((dir / "secret").string()));
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("outside the allowed directory"), std::string::npos)
      << outside.status().message();
  fs::remove_all(dir);
}

TEST(MediaFetcher, S3UrlsGoThroughTheReaderWithTheKeyAsWritten) {
  std::string seen_bucket, seen_key;
  MediaFetchOptions options{.max_bytes = 1000};
  options.read_s3 = [&](std::string_view bucket, std::string_view key, size_t max) -> StatusOr<std::string> {
    seen_bucket = bucket;
    seen_key = key;
    EXPECT_EQ(max, 1000u);
    return std::string("GIF89a...");
  };
  auto got = MediaFetcher(options, nullptr).Fetch("s3://photos/holiday/my photo&1.gif");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(seen_bucket, "photos");
  EXPECT_EQ(seen_key, "holiday/my photo&1.gif");
  EXPECT_EQ(got->kind, MediaKind::kGif);
  for (const char* bad : {"s3://bucket", "s3://bucket/", "s3:///key", "s3:bucket/key"}) {
    EXPECT_EQ(MediaFetcher(options, nullptr).Fetch(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(MediaFetcher({}, nullptr).Fetch("s3://b/k").status().code(), StatusCode::kInvalidArgument);
}

TEST(MediaFetcher, UnknownSchemesAndPrivateAddressesAreRefused) {
  HttpClient client;
  MediaFetcher fetcher({}, &client);
  for (const char* bad : {"ftp://example.com/a.png", "gopher://x", "/etc/passwd", "javascript:alert(1)"}) {
    auto r = fetcher.Fetch(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  for (const char* internal : {"http://127.0.0.1:1/a.png", "http://169.254.169.254/latest/meta-data",
                               "http://10.0.0.1/a.png", "http://[::1]/a.png"}) {
    auto r = fetcher.Fetch(internal);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << internal;
    EXPECT_NE(r.status().message().find("not allowed"), std::string::npos) << r.status().message();
  }
}

TEST(MediaFetcher, HttpOnLoopbackWhenAllowedWithLimitsAndRedirects) {
  HttpServerOptions server_options;
  server_options.access_log = false;
  HttpServer server(server_options);
  const std::string jpeg = ReadTestFile("photo.jpg");
  server.Route(HttpMethod::kGet, "/photo", [&](const HttpRequest&) {
    HttpResponse r{.status = 200, .body = jpeg};
    r.headers.Set("content-type", "image/png");  // wrong on purpose: the bytes decide
    return r;
  });
  server.Route(HttpMethod::kGet, "/loop", [](const HttpRequest&) {
    HttpResponse r{.status = 302};
    r.headers.Set("location", "/loop");
    return r;
  });
  // Answers only when the test ends: a server that never answers in time.
  std::vector<std::shared_ptr<ResponseWriter>> stalled;
  std::mutex stalled_mu;
  server.RouteStreaming(HttpMethod::kGet, "/slow", [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    std::lock_guard lock(stalled_mu);
    stalled.push_back(std::move(w));
  });
  ASSERT_TRUE(server.Start().ok());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  HttpClient client;
  MediaFetcher fetcher({.max_bytes = jpeg.size(), .policy = {.allow_loopback = true}}, &client);
  auto got = fetcher.Fetch(base + "/photo?X-Amz-Signature=secret");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->kind, MediaKind::kJpeg);
  EXPECT_EQ(got->sha256, Sha256Hex(jpeg));
  MediaFetcher small({.max_bytes = jpeg.size() - 1, .policy = {.allow_loopback = true}}, &client);
  auto over = small.Fetch(base + "/photo?X-Amz-Signature=secret");
  EXPECT_EQ(over.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_EQ(over.status().message().find("secret"), std::string::npos);
  MediaFetcher impatient({.timeout = std::chrono::milliseconds(200), .policy = {.allow_loopback = true}}, &client);
  auto slow = impatient.Fetch(base + "/slow");
  EXPECT_EQ(slow.status().code(), StatusCode::kUnavailable) << slow.status().ToString();
  EXPECT_NE(slow.status().message().find("no valid HTTP response"), std::string::npos) << slow.status().message();
  {
    std::lock_guard lock(stalled_mu);
    for (auto& w : stalled) w->Send(HttpResponse{.status = 200, .body = "late"});
  }
  auto loop = fetcher.Fetch(base + "/loop");
  EXPECT_EQ(loop.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loop.status().message().find("redirects"), std::string::npos) << loop.status().message();
  server.Shutdown();
}

}  // namespace
}  // namespace omni::media
