// The embedding fetcher against hostile URLs: file:// confinement without an
// existence oracle, no fetched bytes in errors, and the fetch policy.
#include "services/llm/embedding_fetcher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "modelfile/tensor_object.h"
#include "net/http_server.h"
#include "tensor/tensor.h"

namespace omni::llm {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSecret = "root:x:0:0:root:/root:/bin/bash\n";

std::string EmbeddingBytes() {
  EmbeddingObject obj;
  obj.rows = Tensor::FromFloats(std::vector<float>(2 * 8, 0.5f), {2, 8});
  return SerializeEmbeddingObject(obj).value();
}

class EmbeddingFetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "embedding_fetcher_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    base_ = tmpl;
    store_ = base_ + "/store";
    fs::create_directories(store_ + "/emb/dir");
    fs::create_directories(base_ + "/outside");
    std::ofstream(base_ + "/outside/secret", std::ios::binary) << kSecret;
    std::ofstream(store_ + "/emb/good.safetensors", std::ios::binary) << EmbeddingBytes();
    std::ofstream(store_ + "/emb/corrupt.safetensors", std::ios::binary) << kSecret;
    fs::create_symlink(base_ + "/outside/secret", store_ + "/emb/filelink");
    fs::create_directory_symlink(base_ + "/outside", store_ + "/emb/dirlink");
    ASSERT_EQ(::mkfifo((store_ + "/emb/fifo").c_str(), 0600), 0);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  std::unique_ptr<EmbeddingFetcher> Fetcher(FetchPolicy policy = {}) {
    return std::make_unique<EmbeddingFetcher>(EmbeddingFetcherOptions{
        .store_uri = "file://" + store_, .http_client = &client_, .fetch_policy = std::move(policy)});
  }

  std::string base_, store_;
  HttpClient client_;
};

TEST_F(EmbeddingFetcherTest, ReadsObjectsInTheStore) {
  auto fetched = Fetcher()->Fetch("file://" + store_ + "/emb/good.safetensors");
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_EQ((*fetched)->object.rows.shape()[0], 2);
}

// Refused and missing look the same: one code, one message shape, so a
// client learns neither file contents nor which files exist.
TEST_F(EmbeddingFetcherTest, RefusedAndMissingAreIndistinguishable) {
  auto fetcher = Fetcher();
  const std::string s = "file://" + store_;
  const std::vector<std::string> urls = {
      s + "/emb/missing.safetensors",           // missing
      s + "/%2e%2e/outside/secret",             // encoded traversal
      s + "/emb/%2E%2E/%2e%2e/outside/secret",
      s + "/emb/..%2f..%2foutside%2fsecret",    // encoded separators
      s + "/%252e%252e/outside/secret",         // double encoding: a literal name
      s + "/emb/filelink",                      // a link to a file outside
      s + "/emb/dirlink/secret",                // through a directory link
      s + "/emb/fifo",
      s + "/emb/dir",
      s + "/emb//good.safetensors",
      s + "/emb/./good.safetensors",
      "file://" + base_ + "/outside/secret",    // outside the store
      "file:///etc/passwd",
      "file://" + store_ + "/../outside/secret",
  };
  for (const std::string& url : urls) {
    auto r = fetcher->Fetch(url);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << url << ": " << r.status().ToString();
    EXPECT_EQ(r.status().message(), "embedding object not found: " + url);
  }
}

TEST_F(EmbeddingFetcherTest, CorruptObjectMessagesQuoteNoBytes) {
  auto r = Fetcher()->Fetch("file://" + store_ + "/emb/corrupt.safetensors");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "corrupt embedding object file://" + store_ +
                                      "/emb/corrupt.safetensors: not a safetensors file with 'rows' [N, D] and/or "
                                      "'ids' [N]");
}

TEST_F(EmbeddingFetcherTest, HttpFetchesFollowThePolicy) {
  HttpServerOptions options;
  options.access_log = false;
  HttpServer server(options);
  const std::string bytes = EmbeddingBytes();
  server.Route(HttpMethod::kGet, "/obj", [&](const HttpRequest&) { return HttpResponse{.status = 200, .body = bytes}; });
  server.Route(HttpMethod::kGet, "/leak", [](const HttpRequest&) {
    return HttpResponse{.status = 200, .body = std::string(kSecret)};
  });
  ASSERT_TRUE(server.Start().ok());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());

  auto refused = Fetcher()->Fetch(base + "/obj?X-Amz-Signature=s");
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("the address 127.0.0.1 is loopback"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(refused.status().message().find("X-Amz-Signature"), std::string::npos);

  auto fetcher = Fetcher({.allow_loopback = true});
  EXPECT_TRUE(fetcher->Fetch(base + "/obj").ok());
  auto leak = fetcher->Fetch(base + "/leak");
  EXPECT_EQ(leak.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(leak.status().message().find("root:x"), std::string::npos) << leak.status().message();
  auto missing = fetcher->Fetch(base + "/nothing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  server.Shutdown();
}

}  // namespace
}  // namespace omni::llm
