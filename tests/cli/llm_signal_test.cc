// SIGTERM on the real `omniserve llm`: a second signal during the drain
// exits at once, even with a stream running and a drain deadline far off.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <string>

#include "child_process.h"
#include "net/http_client.h"

namespace omni {
namespace {

namespace fs = std::filesystem;

TEST(LlmSignalTest, SecondSigtermDuringTheDrainExitsAtOnce) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("omni-signal-" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    testing::Child make({"make-demo-model", "--out", (dir / "demo").string()});
    ASSERT_EQ(WEXITSTATUS(make.Wait()), 0) << make.output();
  }
  testing::Child llm({"llm", "--model", (dir / "demo").string(), "--port", "0", "--drain-timeout-ms", "600000"});
  const std::string port = llm.WaitForOutput(std::regex(R"(llm: listening on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << llm.output();
  const std::string base = "http://127.0.0.1:" + port;
  HttpClient client;
  ASSERT_EQ(testing::WaitForHealth(client, base), 200) << llm.output();

  // A stream as long as the context allows keeps the drain from ending.
  std::atomic<int> chunks{0};
  auto stream = client.StreamAsync(
      {.method = HttpMethod::kPost, .url = base + "/v1/completions",
       .body = R"({"prompt":"Go on","ignore_eos":true,"stream":true})", .timeout = std::chrono::seconds(120)},
      {.on_headers = [](int, const HttpHeaders&) { return true; },
       .on_body = [&](std::string_view) {
         ++chunks;
         return true;
       }},
      [](StatusOr<int>) {});
  for (int i = 0; i < 300 && chunks < 2; ++i) usleep(20'000);  // a bound for hangs only
  ASSERT_GE(chunks.load(), 2) << llm.output();

  ASSERT_EQ(kill(llm.pid(), SIGTERM), 0);
  ASSERT_FALSE(llm.WaitForOutput(std::regex("draining")).empty()) << llm.output();
  ASSERT_EQ(kill(llm.pid(), SIGTERM), 0);
  const int status = llm.Wait();  // bounded at 20 s; the drain deadline is 600 s
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << "\n" << llm.output();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << llm.output();
  EXPECT_NE(llm.output().find("exiting now"), std::string::npos) << llm.output();
  stream->Cancel();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace omni
