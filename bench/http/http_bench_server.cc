// A minimal omniserve HTTP server for load tests: GET /v1/ping answers a
// small JSON body; POST /v1/chat/completions answers a small fixed chat
// completion (the backend of the gateway overhead benchmark, whose health
// checks and scrapes /health and /metrics also answer). Prints "port=<n>" on stdout once listening, then serves
// until SIGINT/SIGTERM. Used by wrk.sh.
//
//   http_bench_server --port 0 --threads 1 [--pooled] [--max-inflight-body-bytes N]
//
// By default the ping handler is inline (runs on the io thread), which is how
// cheap endpoints such as /health are served; --pooled measures the hop to
// the worker pool that ordinary handlers pay.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/log.h"
#include "net/http_server.h"

int main(int argc, char** argv) {
  omni::HttpServerOptions options;
  options.access_log = false;
  bool pooled = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--port" && i + 1 < argc) {
      options.port = static_cast<uint16_t>(std::atoi(argv[++i]));
    } else if (arg == "--threads" && i + 1 < argc) {
      options.io_threads = std::atoi(argv[++i]);
    } else if (arg == "--workers" && i + 1 < argc) {
      options.worker_threads = std::atoi(argv[++i]);
    } else if (arg == "--max-inflight-body-bytes" && i + 1 < argc) {
      options.max_inflight_body_bytes = static_cast<size_t>(std::atoll(argv[++i]));
    } else if (arg == "--pooled") {
      pooled = true;
    } else {
      std::fprintf(stderr, "usage: %s [--port N] [--threads N] [--workers N] [--max-inflight-body-bytes N] [--pooled]\n", argv[0]);
      return 2;
    }
  }
  omni::log::Init({.level = omni::log::Level::kWarn, .json = false, .role = "http_bench_server"});
  omni::HttpServer server(options);
  auto ping = [](const omni::HttpRequest&) { return omni::JsonResponse(200, R"({"object":"pong"})"); };
  auto chat = [](const omni::HttpRequest&) {
    return omni::JsonResponse(200, R"({"id":"chatcmpl-0","object":"chat.completion","choices":[{"index":0,)"
                                   R"("message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]})");
  };
  if (pooled) {
    server.Route(omni::HttpMethod::kGet, "/v1/ping", ping);
    server.Route(omni::HttpMethod::kPost, "/v1/chat/completions", chat);
  } else {
    server.RouteInline(omni::HttpMethod::kGet, "/v1/ping", ping);
    server.RouteInline(omni::HttpMethod::kPost, "/v1/chat/completions", chat);
  }
  omni::Status s = server.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("port=%u\n", server.port());
  std::fflush(stdout);
  server.RunUntilSignal();
  return 0;
}
