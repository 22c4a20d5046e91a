// The HTTP face of LlmService: parses bodies into typed requests
// (openai_parse.h), calls the service, writes JSON or SSE. No generation
// logic lives here.
//
// Generation requests run on a thread of their own (they fetch media and
// block until the engine finishes); WaitIdle() joins them at shutdown.
//
// Thread-safety: thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "net/http_server.h"
#include "services/llm/llm_service.h"

namespace omni::llm {

class LlmHttpAdapter {
 public:
  // `service` and `metrics` (the registry /metrics renders) must outlive the adapter.
  LlmHttpAdapter(LlmService& service, MetricsRegistry& metrics) : service_(service), metrics_(metrics) {}
  ~LlmHttpAdapter() { WaitIdle(); }

  // /v1/chat/completions, /v1/completions, /v1/models, /tokenize,
  // /detokenize, /health (503 while loading), /metrics.
  void RegisterRoutes(HttpServer& server);
  // Blocks until no generation thread is running.
  void WaitIdle();

 private:
  void StartGeneration(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool chat);
  void RunGeneration(const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer, bool chat);
  void Stream(const PreparedGeneration& prepared, const std::shared_ptr<ResponseWriter>& writer);
  void Unary(const PreparedGeneration& prepared, const std::shared_ptr<ResponseWriter>& writer);

  LlmService& service_;
  MetricsRegistry& metrics_;
  std::mutex mu_;
  std::condition_variable idle_;
  int in_flight_ = 0;  // guarded by mu_
};

}  // namespace omni::llm
