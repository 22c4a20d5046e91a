// Starting a child process from a threaded server (supervisor.h, the
// decoder's rank processes): posix_spawn, which is safe with threads, with a
// clean signal mask, SIGTERM/SIGINT/SIGPIPE at their defaults, and no file
// descriptor but 0-2 inherited (a listening or client socket held open by a
// child would outlive the parent's close of it).
//
// Thread-safety: thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace omni {

struct SpawnOptions {
  int stdin_fd = -1;               // becomes the child's stdin; -1: the parent's
  bool own_process_group = false;  // a terminal's Ctrl-C then reaches only the parent
};

// argv[0] is the executable's path. Internal naming it when it cannot start.
StatusOr<pid_t> SpawnProcess(const std::vector<std::string>& argv, const SpawnOptions& options = {});

}  // namespace omni
