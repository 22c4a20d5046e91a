// `omniserve up`: the whole stack on one machine, on loopback, behind one
// client port. It starts every role this build has as a supervised child
// process and serves the client-facing port itself until SIGTERM/SIGINT.
#pragma once

#include <cstdint>
#include <string>

namespace omni::cli {

struct UpOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string self_path;  // this binary, for starting roles as children
};

// Returns the process exit code.
int RunUp(const UpOptions& options);

}  // namespace omni::cli
