// Runs the real `omniserve` binary: --help, version, and `up` serving its
// client port until SIGTERM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "net/http_client.h"

extern char** environ;

namespace omni {
namespace {

// A child process of the test with stdout+stderr captured through a pipe.
class Child {
 public:
  explicit Child(std::vector<std::string> args) {
    args.insert(args.begin(), OMNI_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    OMNI_CHECK(pipe(fds) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    OMNI_CHECK(posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    out_fd_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_fd_);
  }

  // Reads output until `re` matches (returns the first group) or 20 s pass.
  std::string WaitForOutput(const std::regex& re) {
    for (int i = 0; i < 200; ++i) {
      std::smatch m;
      if (std::regex_search(output_, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      ReadSome(100);
    }
    return "";
  }
  // Waits for exit (20 s bound) and returns the wait status; reads all output.
  int Wait() {
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        while (ReadSome(50)) {}
        return status;
      }
      ReadSome(100);
    }
    return -1;
  }
  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

 private:
  bool ReadSome(int timeout_ms) {
    if (eof_) {  // nothing more will come; just let time pass
      usleep(timeout_ms * 1000);
      return false;
    }
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[4096];
    ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    output_.append(buf, n);
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool eof_ = false;
  std::string output_;
};

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
  Child c({"gateway", "--config", "x.yaml"});
  int status = c.Wait();
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(c.output().find("the gateway role is not in this build yet"), std::string::npos) << c.output();
}

TEST(UpTest, ServesClientPortAndStopsCleanlyOnSigterm) {
  Child up({"--log-format", "json", "up", "--port", "0"});
  std::string port = up.WaitForOutput(std::regex(R"(up: serving http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << up.output();
  std::string base = "http://127.0.0.1:" + port;
  HttpClient client;

  auto health = client.Request({.url = base + "/health"});
  ASSERT_TRUE(health.ok()) << health.status().ToString();
  EXPECT_EQ(health->status, 200);

  auto models = client.Request({.url = base + "/v1/models"});
  ASSERT_TRUE(models.ok());
  auto mj = nlohmann::json::parse(models->body);
  EXPECT_EQ(mj["object"], "list");
  EXPECT_TRUE(mj["data"].is_array());

  auto chat = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions",
                              .body = R"({"model":"omni","messages":[{"role":"user","content":"hi"}]})"});
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->status, 503);
  auto ej = nlohmann::json::parse(chat->body);
  EXPECT_EQ(ej["error"]["code"], "no_model_served");
  EXPECT_EQ(ej["error"]["type"], "server_error");
  EXPECT_NE(ej["error"]["message"].get<std::string>().find("llm"), std::string::npos);

  auto metrics = client.Request({.url = base + "/metrics"});
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("# TYPE"), std::string::npos);

  ASSERT_EQ(kill(up.pid(), SIGTERM), 0);
  int status = up.Wait();
  ASSERT_TRUE(WIFEXITED(status)) << "wait status " << status << "\n" << up.output();
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Every line is one JSON log event carrying the role.
  std::istringstream lines(up.output());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    EXPECT_EQ(j["role"], "up");
    ++n;
  }
  EXPECT_GE(n, 3);
  EXPECT_NE(up.output().find("up: stopped"), std::string::npos);
}

}  // namespace
}  // namespace omni
