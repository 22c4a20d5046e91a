// Runs the real `omniserve` binary: --help, version, and `up` serving its
// client port until SIGTERM.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <set>
#include <sstream>

#include "net/http_client.h"
#include "child_process.h"

namespace omni {
namespace {

using testing::Child;

TEST(CliTest, HelpListsEveryRole) {
  Child c({"--help"});
  int status = c.Wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (const char* role : {"up", "orchestrator", "gateway", "llm", "encoder", "decoder", "make-demo-model",
                           "store", "bench", "generate", "version"}) {
    EXPECT_TRUE(std::regex_search(c.output(), std::regex(std::string("\n  ") + role + " "))) << role;
  }
}

TEST(CliTest, VersionPrintsSemver) {
  Child c({"version"});
  ASSERT_EQ(WEXITSTATUS(c.Wait()), 0);
  EXPECT_TRUE(std::regex_search(c.output(), std::regex(R"(^omniserve \d+\.\d+\.\d+ \()"))) << c.output();
}

TEST(CliTest, RoleNotInBuildExitsWithReason) {
  Child c({"orchestrator"});
  int status = c.Wait();
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(c.output().find("the orchestrator role is not in this build yet"), std::string::npos) << c.output();
}

TEST(UpTest, ServesTheOpenAiApiOnTheDemoModelAndStopsOnSigterm) {
  std::string data_dir = ::testing::TempDir() + "omni-up-" + std::to_string(getpid());
  Child up({"--log-format", "json", "up", "--port", "0", "--data-dir", data_dir});
  std::string port = up.WaitForOutput(std::regex(R"(llm: listening on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << up.output();
  std::string base = "http://127.0.0.1:" + port;
  HttpClient client;

  // /health is 503 while the model loads, then 200 (bounded wait).
  const int health = testing::WaitForHealth(client, base);
  ASSERT_EQ(health, 200) << up.output();
  // up picked the port and says where the API is, once the llm role is healthy.
  const std::string served =
      up.WaitForOutput(std::regex(R"(is served by the llm role on http://127\.0\.0\.1:(\d+))"));
  EXPECT_EQ(served, port) << up.output();
  EXPECT_LT(up.output().find("llm (pid"), up.output().find("is served by the llm role")) << up.output();

  auto models = client.Request({.url = base + "/v1/models"});
  ASSERT_TRUE(models.ok());
  auto mj = nlohmann::json::parse(models->body);
  ASSERT_EQ(mj["data"].size(), 1u);
  EXPECT_EQ(mj["data"][0]["id"], "omni-demo");

  auto chat = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions",
                              .body = R"({"model":"omni-demo","max_tokens":8,"temperature":0,
                                          "messages":[{"role":"user","content":"hi"}]})"});
  ASSERT_TRUE(chat.ok());
  ASSERT_EQ(chat->status, 200) << chat->body;
  auto cj = nlohmann::json::parse(chat->body);
  EXPECT_EQ(cj["object"], "chat.completion");
  EXPECT_GT(cj["usage"]["completion_tokens"].get<int>(), 0);

  auto unknown = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions",
                                 .body = R"({"model":"gpt-9","messages":[{"role":"user","content":"hi"}]})"});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(nlohmann::json::parse(unknown->body)["error"]["code"], "model_not_found");

  ASSERT_EQ(kill(up.pid(), SIGTERM), 0);
  int status = up.Wait();
  ASSERT_TRUE(WIFEXITED(status)) << "wait status " << status << "\n" << up.output();
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Every line is one JSON log event; up and its llm child each say who they are.
  std::istringstream lines(up.output());
  std::string line;
  std::set<std::string> roles;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    roles.insert(j["role"].get<std::string>());
  }
  EXPECT_EQ(roles, (std::set<std::string>{"up", "llm"}));
  EXPECT_NE(up.output().find("up: stopped"), std::string::npos);
  std::filesystem::remove_all(data_dir);
}

}  // namespace
}  // namespace omni
