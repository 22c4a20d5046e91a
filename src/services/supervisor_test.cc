#include "services/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace omni {
namespace {

using namespace std::chrono_literals;

// Polls until `pred` holds or 10 s pass (a bound so a bug fails fast, not a
// performance assertion).
template <typename P>
bool WaitFor(Supervisor& s, P pred) {
  for (int i = 0; i < 1000; ++i) {
    s.Poll();
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(SupervisorTest, RestartsACrashedChild) {
  Supervisor sup({.restart_backoff = 10ms, .max_restart_backoff = 20ms, .stop_grace = 2000ms});
  ASSERT_TRUE(sup.Start({{.name = "crashy", .argv = {"/bin/sh", "-c", "exit 3"}}}).ok());
  ASSERT_TRUE(WaitFor(sup, [&] { return sup.children()[0].restarts >= 2; }));
  EXPECT_TRUE(WIFEXITED(sup.children()[0].last_exit));
  EXPECT_EQ(WEXITSTATUS(sup.children()[0].last_exit), 3);
  sup.Stop();
}

TEST(SupervisorTest, StopSendsSigtermAndChildExitsCleanly) {
  Supervisor sup({.stop_grace = 5000ms});
  // The child traps TERM and exits 0, like a role draining its requests.
  ASSERT_TRUE(sup.Start({{.name = "role", .argv = {"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"}}}).ok());
  pid_t pid = sup.children()[0].pid;
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(100ms);  // let the shell install its trap
  sup.Poll();
  EXPECT_EQ(sup.children()[0].restarts, 0);
  sup.Stop();
  EXPECT_EQ(sup.children()[0].pid, -1);
  EXPECT_TRUE(WIFEXITED(sup.children()[0].last_exit));
  EXPECT_EQ(WEXITSTATUS(sup.children()[0].last_exit), 0);
  EXPECT_EQ(kill(pid, 0), -1);  // gone and reaped
}

TEST(SupervisorTest, KillsAChildThatIgnoresSigterm) {
  Supervisor sup({.stop_grace = 200ms});
  ASSERT_TRUE(sup.Start({{.name = "stubborn", .argv = {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}}}).ok());
  std::this_thread::sleep_for(100ms);
  sup.Stop();
  EXPECT_TRUE(WIFSIGNALED(sup.children()[0].last_exit));
  EXPECT_EQ(WTERMSIG(sup.children()[0].last_exit), SIGKILL);
}

// A fresh directory for a test's marker files.
std::string TempDir() {
  char pattern[] = "/tmp/omni_supervisor_XXXXXX";
  const char* dir = mkdtemp(pattern);
  EXPECT_NE(dir, nullptr);
  return dir == nullptr ? "/tmp" : dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(SupervisorTest, StartsEachChildOnceTheOneBeforeIsReady) {
  const std::string dir = TempDir();
  Supervisor sup({.stop_grace = 2000ms});
  // The first child becomes ready 300 ms after it starts; the second records
  // whether the first was ready when it started.
  ASSERT_TRUE(sup.Start({{.name = "first",
                          .argv = {"/bin/sh", "-c", "sleep 0.3; touch " + dir + "/ready; exec sleep 30"},
                          .ready = [&] { return std::filesystem::exists(dir + "/ready"); }},
                         {.name = "second",
                          .argv = {"/bin/sh", "-c",
                                   "test -f " + dir + "/ready && echo after > " + dir + "/seen; exec sleep 30"}}})
                  .ok());
  ASSERT_TRUE(WaitFor(sup, [&] { return std::filesystem::exists(dir + "/seen"); }));
  EXPECT_EQ(ReadFile(dir + "/seen"), "after\n");
  sup.Stop();
  std::filesystem::remove_all(dir);
}

TEST(SupervisorTest, ChildExitingBeforeReadyFailsStartAndStopsTheOthers) {
  Supervisor sup({.stop_grace = 2000ms});
  Status s = sup.Start({{.name = "base", .argv = {"/bin/sh", "-c", "exec sleep 30"}},
                        {.name = "broken", .argv = {"/bin/sh", "-c", "exit 7"}, .ready = [] { return false; }},
                        {.name = "never", .argv = {"/bin/sh", "-c", "exec sleep 30"}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("broken exited with code 7 before it was ready"), std::string::npos) << s.message();
  ASSERT_EQ(sup.children().size(), 2u);  // `never` was not started
  EXPECT_EQ(sup.children()[0].pid, -1);  // `base` was stopped
}

TEST(SupervisorTest, AnAbortedStartStopsTheChildrenStartedSoFar) {
  std::atomic<bool> abort = false;
  Supervisor sup({.stop_grace = 2000ms, .abort_start = [&] { return abort.load(); }});
  std::thread signaller([&] {
    std::this_thread::sleep_for(100ms);
    abort = true;
  });
  Status s = sup.Start({{.name = "base", .argv = {"/bin/sh", "-c", "exec sleep 30"}},
                        {.name = "loading", .argv = {"/bin/sh", "-c", "exec sleep 30"}, .ready = [] { return false; }},
                        {.name = "never", .argv = {"/bin/sh", "-c", "exec sleep 30"}}});
  signaller.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_NE(s.message().find("waiting for loading"), std::string::npos) << s.message();
  ASSERT_EQ(sup.children().size(), 2u);  // `never` was not started
  EXPECT_EQ(sup.children()[0].pid, -1);  // both were stopped
  EXPECT_EQ(sup.children()[1].pid, -1);
}

TEST(SupervisorTest, ChildNotReadyInTimeFailsStart) {
  Supervisor sup({.stop_grace = 2000ms});
  Status s = sup.Start({{.name = "slow", .argv = {"/bin/sh", "-c", "exec sleep 30"}, .ready = [] { return false; },
                         .ready_timeout = 100ms}});
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("slow was not ready within 100 ms"), std::string::npos) << s.message();
  EXPECT_EQ(sup.children()[0].pid, -1);
}

TEST(SupervisorTest, StopsInReverseStartOrder) {
  const std::string dir = TempDir();
  Supervisor sup({.stop_grace = 5000ms});
  std::vector<ChildSpec> specs;
  for (const char* name : {"llm", "gateway", "orchestrator"}) {
    const std::string marker = dir + "/" + name;
    // On TERM each appends its name to one log; it is ready once its trap is set.
    specs.push_back({.name = name,
                     .argv = {"/bin/sh", "-c",
                              "trap 'echo " + std::string(name) + " >> " + dir + "/order; exit 0' TERM; touch " +
                                  marker + "; while :; do sleep 0.05; done"},
                     .ready = [marker] { return std::filesystem::exists(marker); }});
  }
  ASSERT_TRUE(sup.Start(std::move(specs)).ok());
  sup.Stop();
  EXPECT_EQ(ReadFile(dir + "/order"), "orchestrator\ngateway\nllm\n");
  std::filesystem::remove_all(dir);
}

TEST(SupervisorTest, MissingExecutableFailsStart) {
  Supervisor sup({});
  Status s = sup.Start({{.name = "ghost", .argv = {"/nonexistent/omniserve"}}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot start ghost"), std::string::npos) << s.message();
}

TEST(SupervisorTest, DescribeExit) {
  EXPECT_EQ(DescribeExit(3 << 8), "exited with code 3");
  EXPECT_EQ(DescribeExit(SIGKILL), "killed by signal 9");
}

}  // namespace
}  // namespace omni
