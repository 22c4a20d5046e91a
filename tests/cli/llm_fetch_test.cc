// `omniserve llm --store file://S` against the hostile inputs of issue 13,
// through the real binary: no byte of a file outside the store, no existence
// oracle, and no fetch of the server's own (or any loopback) port.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "child_process.h"
#include "net/http_client.h"

namespace omni {
namespace {

using testing::Child;
namespace fs = std::filesystem;

// The decimal header length a safetensors parser reads from a file's first
// 8 bytes: the number the old error message leaked.
std::string HeaderLengthOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, 8);
  uint64_t n = 0;
  std::memcpy(&n, head, 8);
  return std::to_string(n);
}

std::string WithPortsMasked(std::string text, const std::vector<std::string>& ports) {
  for (const std::string& port : ports) {
    for (size_t at = text.find(port); at != std::string::npos; at = text.find(port)) text.replace(at, port.size(), "PORT");
  }
  return text;
}

TEST(LlmFetchTest, FileUrlsAreConfinedAndLoopbackIsNotFetched) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("omni-llm-fetch-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const std::string store = (dir / "store").string();
  fs::create_directories(store);
  {
    Child make({"make-demo-model", "--out", (dir / "demo").string()});
    ASSERT_EQ(WEXITSTATUS(make.Wait()), 0) << make.output();
  }
  fs::create_symlink("/etc/passwd", store + "/passwd");
  fs::create_directory_symlink("/etc", store + "/etc");

  Child llm({"llm", "--model", (dir / "demo").string(), "--port", "0", "--store", "file://" + store});
  const std::string port = llm.WaitForOutput(std::regex(R"(llm: listening on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << llm.output();
  const std::string base = "http://127.0.0.1:" + port;
  HttpClient client;
  const int health = testing::WaitForHealth(client, base);
  ASSERT_EQ(health, 200) << llm.output();

  auto chat = [&](const std::string& url, std::string* message) {
    nlohmann::json body = {
        {"model", "demo"},
        {"max_tokens", 1},
        {"messages", {{{"role", "user"},
                       {"content", {{{"type", "image_url"}, {"image_url", {{"url", url}}}}}}}}}};
    auto r = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions", .body = body.dump()});
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return 0;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << r->body;
    EXPECT_EQ(r->body.find(HeaderLengthOf("/etc/passwd")), std::string::npos) << r->body;
    *message = nlohmann::json::parse(r->body)["error"]["message"].get<std::string>();
    return r->status;
  };

  std::string up;  // from the store to the file system root
  for (const auto& part : fs::path(store).relative_path()) {
    if (!part.empty()) up += "/%2e%2e";
  }
  for (const std::string& url : {"file://" + store + up + "/etc/passwd",   // the reproduction of issue 13
                                 "file://" + store + "/passwd",            // a link to a file outside
                                 "file://" + store + "/etc/passwd",        // through a directory link
                                 "file://" + store + "/nothing.safetensors",  // missing
                                 std::string("file:///etc/passwd")}) {
    std::string message;
    EXPECT_EQ(chat(url, &message), 404) << url;
    EXPECT_EQ(message, "embedding object not found: " + url);
  }

  // The server's own port (open) and a closed one read the same: refused
  // before any connection.
  std::string open_message, closed_message;
  EXPECT_EQ(chat(base + "/health", &open_message), 400);
  EXPECT_EQ(chat("http://127.0.0.1:65123/health", &closed_message), 400);
  EXPECT_EQ(WithPortsMasked(open_message, {port}), WithPortsMasked(closed_message, {"65123"}));
  EXPECT_NE(open_message.find("is loopback (allow it with --fetch-allow-loopback)"), std::string::npos)
      << open_message;

  ASSERT_EQ(kill(llm.pid(), SIGTERM), 0);
  llm.Wait();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omni
