// The HTTP face of LlmService: parses bodies into typed requests
// (openai_parse.h), calls the service, writes JSON or SSE. No generation
// logic lives here.
//
// No thread per request: a generation request is parsed and prepared
// (template, tokenizer, embedding fetches) on a small pool, then runs in the
// engine, and its reply is written from the service's output thread with
// non-blocking writes. Admission control bounds the requests held at once
// (preparing, waiting or running); beyond the bound a request gets 429 with
// Retry-After, never a 500.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "core/thread_pool.h"
#include "net/http_server.h"
#include "services/llm/llm_service.h"

namespace omni::llm {

struct LlmHttpOptions {
  // Generation requests held at once (preparing, queued in the engine or
  // running); more get 429. Each costs a little memory, no thread.
  int max_pending_requests = 4096;
  // Threads that prepare requests (render, tokenize, fetch embeddings).
  int prepare_threads = 2;
};

class LlmHttpAdapter {
 public:
  // `service` and `metrics` (the registry /metrics renders) must outlive the adapter.
  LlmHttpAdapter(LlmService& service, MetricsRegistry& metrics, LlmHttpOptions options = {});
  ~LlmHttpAdapter();

  // /v1/chat/completions, /v1/completions, /v1/models, /tokenize,
  // /detokenize, /health (503 while loading), /metrics; and the server's
  // drain-deadline hook, which aborts running generations so their streams
  // end with an error event and [DONE].
  void RegisterRoutes(HttpServer& server);
  // Blocks until no generation request is held, or `timeout` passed (then
  // false, logged). Call after the service's Shutdown().
  bool WaitIdle(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  int pending_requests() const { return pending_.load(); }

 private:
  struct Exchange;

  void StartGeneration(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool chat);
  void Prepare(const std::shared_ptr<Exchange>& ex, const HttpRequest& request);
  void Stream(const std::shared_ptr<Exchange>& ex);
  void Unary(const std::shared_ptr<Exchange>& ex);
  static PreparedGeneration TakeEngineRequest(Exchange& ex);
  void Release();

  LlmService& service_;
  MetricsRegistry& metrics_;
  const LlmHttpOptions options_;
  Counter* rejected_total_;
  Gauge* pending_gauge_;
  std::atomic<int> pending_{0};
  std::mutex mu_;
  std::condition_variable idle_;  // notified when pending_ drops to 0
  ThreadPool prepare_pool_;       // declared last: joined first
};

}  // namespace omni::llm
