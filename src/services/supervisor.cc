#include "services/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/log.h"
#include "core/spawn.h"


namespace omni {

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return "killed by signal " + std::to_string(WTERMSIG(wait_status));
  return "stopped";
}

Supervisor::Supervisor(SupervisorOptions options, const Clock& clock) : options_(options), clock_(clock) {}

Supervisor::~Supervisor() { Stop(); }

StatusOr<pid_t> Supervisor::Spawn(const ChildSpec& spec) {
  OMNI_CHECK(!spec.argv.empty()) << "child " << spec.name << " has no argv";
  // The parent blocks SIGTERM/SIGINT to wait for them synchronously;
  // SpawnProcess gives the child a clean mask and default dispositions.
  StatusOr<pid_t> pid = SpawnProcess(spec.argv);
  if (!pid.ok()) return Internal("cannot start " + spec.name + ": " + pid.status().message());
  OMNI_LOG(kInfo, "started {} pid={}", spec.name, *pid);
  return pid;
}

Status Supervisor::Start(std::vector<ChildSpec> specs) {
  for (auto& spec : specs) {
    auto pid = Spawn(spec);
    if (!pid.ok()) {
      Stop();
      return pid.status();
    }
    children_.push_back(Child{.spec = std::move(spec), .started_at = clock_.Now(), .backoff = options_.restart_backoff});
    states_.push_back(ChildState{.name = children_.back().spec.name, .pid = *pid});
    if (Status s = AwaitReady(children_.size() - 1); !s.ok()) {
      Stop();
      return s;
    }
  }
  return Status::Ok();
}

Status Supervisor::AwaitReady(size_t i) {
  const ChildSpec& spec = children_[i].spec;
  if (!spec.ready) return Status::Ok();
  // A bound on a start, not a timer of the supervised work: real time.
  const auto deadline = std::chrono::steady_clock::now() + spec.ready_timeout;
  for (;;) {
    int status = 0;
    if (waitpid(states_[i].pid, &status, WNOHANG) == states_[i].pid) {
      states_[i].pid = -1;
      states_[i].last_exit = status;
      return Unavailable(spec.name + " " + DescribeExit(status) + " before it was ready");
    }
    if (spec.ready()) {
      OMNI_LOG(kInfo, "{} (pid {}) is ready", spec.name, states_[i].pid);
      return Status::Ok();
    }
    if (options_.abort_start && options_.abort_start()) {
      return Cancelled("the start was interrupted while waiting for " + spec.name + " to be ready");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceeded(spec.name + " was not ready within " + std::to_string(spec.ready_timeout.count()) +
                              " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Supervisor::OnExit(size_t i, int wait_status) {
  Child& c = children_[i];
  ChildState& s = states_[i];
  pid_t pid = s.pid;
  s.pid = -1;
  s.last_exit = wait_status;
  if (stopping_) return;
  // A child that ran long enough is not crash-looping: start over from the
  // shortest backoff.
  if (clock_.Now() - c.started_at >= options_.stable_after) c.backoff = options_.restart_backoff;
  c.restart_at = clock_.Now() + c.backoff;
  OMNI_LOG(kWarn, "{} (pid {}) {}; restarting in {} ms", c.spec.name, pid, DescribeExit(wait_status),
           c.backoff.count());
  c.backoff = std::min(c.backoff * 2, options_.max_restart_backoff);
}

void Supervisor::Poll() {
  for (size_t i = 0; i < children_.size(); ++i) {
    ChildState& s = states_[i];
    if (s.pid > 0) {
      int status = 0;
      pid_t r = waitpid(s.pid, &status, WNOHANG);
      if (r == s.pid) OnExit(i, status);
      continue;
    }
    if (stopping_ || clock_.Now() < children_[i].restart_at) continue;
    auto pid = Spawn(children_[i].spec);
    if (pid.ok()) {
      s.pid = *pid;
      s.restarts++;
      children_[i].started_at = clock_.Now();
    } else {
      OMNI_LOG(kError, "{}", pid.status().ToString());
      children_[i].restart_at = clock_.Now() + options_.max_restart_backoff;
    }
  }
}

void Supervisor::Stop() {
  stopping_ = true;
  for (size_t i = states_.size(); i-- > 0;) StopChild(i);
}

void Supervisor::StopChild(size_t i) {
  ChildState& s = states_[i];
  if (s.pid <= 0) return;
  kill(s.pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + options_.stop_grace;
  for (;;) {
    int status = 0;
    if (waitpid(s.pid, &status, WNOHANG) == s.pid) {
      OMNI_LOG(kInfo, "{} (pid {}) {}", s.name, s.pid, DescribeExit(status));
      s.pid = -1;
      s.last_exit = status;
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  OMNI_LOG(kWarn, "{} (pid {}) did not stop within {} ms; killing", s.name, s.pid, options_.stop_grace.count());
  kill(s.pid, SIGKILL);
  waitpid(s.pid, &s.last_exit, 0);
  s.pid = -1;
}

}  // namespace omni
