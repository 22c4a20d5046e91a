// A child process of a test: runs the real omniserve binary with stdout and
// stderr captured through one pipe. Killed (SIGKILL, by PID) if still running
// when destroyed.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "core/check.h"
#include "net/http_client.h"

extern char** environ;

namespace omni::testing {

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

  // Reads output until `re` matches (returns the first group) or `bound` passes.
  // Bounded by time, not by reads: a chatty child (a stack logging every
  // health check) returns from each read at once.
  std::string WaitForOutput(const std::regex& re, std::chrono::seconds bound = std::chrono::seconds(120)) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
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

// The status of GET base/health once it is 200, or the last one seen
// after about 30 s (0: no answer): a bound for hangs, not a timing check.
inline int WaitForHealth(HttpClient& client, const std::string& base) {
  int health = 0;
  for (int i = 0; i < 300 && health != 200; ++i) {
    auto r = client.Request({.url = base + "/health"});
    health = r.ok() ? r->status : 0;
    if (health != 200) usleep(100'000);
  }
  return health;
}

}  // namespace omni::testing
