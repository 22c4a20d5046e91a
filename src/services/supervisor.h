// Supervisor: runs each omniserve role as a child process, restarts a child
// that dies, and stops them all on shutdown. It is the process-management half
// of `omniserve up`; the roles themselves know nothing about it.
//
// Children are started with posix_spawn (safe in a threaded process), with the
// signal mask and SIGTERM/SIGINT dispositions reset. They are signalled only
// by the PIDs this supervisor started.
//
// Thread-safety: not thread-safe; drive it from one thread (the `up` main loop).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace omni {

struct ChildSpec {
  std::string name;               // the role, for logs: "llm", "gateway"
  std::vector<std::string> argv;  // argv[0] is the executable's path
  // True once the child serves (for a role: its /health answers 200). Start()
  // starts the next child only after this holds; null means ready at once.
  // Called from the thread driving the supervisor; must not block for long.
  std::function<bool()> ready;
  // How long Start() waits for `ready`.
  std::chrono::milliseconds ready_timeout{120'000};
};

struct SupervisorOptions {
  // Restart delay doubles after each crash from `restart_backoff` up to
  // `max_restart_backoff`, and resets once a child stayed up for `stable_after`.
  std::chrono::milliseconds restart_backoff{200};
  std::chrono::milliseconds max_restart_backoff{5000};
  std::chrono::milliseconds stable_after{10000};
  // How long Stop() waits after SIGTERM before SIGKILL.
  std::chrono::milliseconds stop_grace{10000};
  // Checked while Start() waits for a child to be ready: once true, Start()
  // stops the children started so far and returns Cancelled (`up` aborts a
  // start on SIGTERM/SIGINT this way). Null: never.
  std::function<bool()> abort_start;
};

struct ChildState {
  std::string name;
  pid_t pid = -1;        // -1 while waiting to restart
  int restarts = 0;
  int last_exit = 0;     // wait status of the last exit, decoded by DescribeExit
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options, const Clock& clock = Clock::Real());
  ~Supervisor();  // Stop()s anything still running
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts the children in order, each once the one before it is ready (its
  // `ready` holds), so a role starts after the roles it depends on. On a
  // failure (a child cannot be spawned, exits before it is ready, or is not
  // ready within its ready_timeout) stops the ones started and says which.
  Status Start(std::vector<ChildSpec> specs);
  // Reaps children that exited and restarts those whose backoff has passed.
  // Call it regularly from the main loop; it never blocks.
  void Poll();
  // Stops the children in reverse start order (dependents before what they
  // depend on): SIGTERM, up to stop_grace for it to drain and exit, then
  // SIGKILL; then the next. Idempotent.
  void Stop();

  const std::vector<ChildState>& children() const { return states_; }

 private:
  struct Child {
    ChildSpec spec;
    Clock::MonoTime started_at{};
    Clock::MonoTime restart_at{};
    std::chrono::milliseconds backoff{0};
  };

  StatusOr<pid_t> Spawn(const ChildSpec& spec);
  // Waits for the newest child's `ready`; an error if it exits or times out.
  Status AwaitReady(size_t i);
  void OnExit(size_t i, int wait_status);
  void StopChild(size_t i);

  SupervisorOptions options_;
  const Clock& clock_;
  std::vector<Child> children_;
  std::vector<ChildState> states_;  // parallel to children_
  bool stopping_ = false;
};

// "exited with code 3" / "killed by signal 9".
std::string DescribeExit(int wait_status);

}  // namespace omni
