// `omniserve up`: the whole stack on one machine, on loopback. It writes the
// demo model on first start, then runs every role this build has as a
// supervised child process (restarted if it dies), each started once the one
// before it answers /health, until SIGTERM/SIGINT, when it stops the children
// in reverse order (each drains its in-flight requests).
//
// The stack today: N llm replicas and the gateway over them on ports the OS
// picks, then the orchestrator on the client port, in front of the gateway;
// its /health reports every child. Configs go to DATA_DIR/run/, objects to
// DATA_DIR/objects/.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace omni::cli {

struct UpOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string data_dir;   // models and objects; default $HOME/.cache/omniserve
  std::string config;     // `up --config FILE` (services/stack_config.h); empty: the demo stack
  // Behind the gateway, so prefix-aware routing is on the path; unset: the
  // config's llm.replicas, else 2.
  std::optional<int> llm_replicas;
  std::string self_path;  // this binary, for starting roles as children
  std::string log_level = "info";  // passed on to every child
  std::string log_format = "text";
  // How long each role may take to answer /health with 200 once started
  // (loading a real model takes a while); the next role waits for it.
  std::chrono::milliseconds start_timeout{600'000};
};

// Returns the process exit code.
int RunUp(const UpOptions& options);

}  // namespace omni::cli
