// `omniserve gateway --config FILE --port P`: one entry for every model
// server, with body-based model routing and cache-aware endpoint picking
// (docs/GATEWAY.md).
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace omni::cli {

struct GatewayFlags {
  std::string config;
  std::string host = "127.0.0.1";
  int port = 8080;
  int io_threads = 2;
  int metrics_interval_ms = 50;
  int health_interval_ms = 500;
  int unhealthy_after = 2;
  int connect_timeout_ms = 2000;
  int request_timeout_s = 600;
  int max_attempts = 3;
  int64_t seed = 0;
  int64_t max_inflight_body_bytes = 256ll << 20;  // request bodies buffered at once; more get 503
  int drain_timeout_ms = 30'000;                  // SIGTERM: how long proxied requests may finish
};

CLI::App* AddGatewayCommand(CLI::App& app, GatewayFlags* flags);
int RunGatewayCommand(const GatewayFlags& flags);

}  // namespace omni::cli
