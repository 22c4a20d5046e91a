// `omniserve orchestrator --config FILE --port P`: the OpenAI Chat
// Completions front of the stack (docs/ORCHESTRATOR.md). It talks only to
// the gateway and the object store named in its config.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace omni::cli {

struct OrchestratorFlags {
  std::string config;
  std::string host = "127.0.0.1";
  int port = 8000;
  int io_threads = 2;
  int64_t max_body_bytes = 64ll << 20;            // one request; more get 413
  int64_t max_inflight_body_bytes = 256ll << 20;  // request bodies buffered at once; more get 503
  int drain_timeout_ms = 30'000;                  // SIGTERM: how long running requests may finish
};

CLI::App* AddOrchestratorCommand(CLI::App& app, OrchestratorFlags* flags);
int RunOrchestratorCommand(const OrchestratorFlags& flags);

}  // namespace omni::cli
