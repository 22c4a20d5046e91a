#include "services/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <thread>

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
