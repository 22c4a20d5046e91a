// The HTTP face of EncoderService: POST /v1/encode, OmniServe's POST
// /process_image_or_video and /process_audio, GET /v1/models; /health and /metrics come from
// the server.
//
// No thread per request: a request is parsed on an io thread and queued for
// a small worker set, which fetches, decodes and stores; the model forwards
// themselves run one at a time through the EncodeBatcher (encode_batcher.h),
// since each uses every compute thread. Beyond `max_queue` waiting requests
// the answer is 429 with Retry-After, at once.
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "core/thread_pool.h"
#include "net/http_server.h"
#include "services/encoder/encoder_service.h"

namespace omni::encoder {

struct EncoderHttpOptions {
  int workers = 4;     // requests handled at once (their forwards are serialised by the batcher)
  int max_queue = 16;  // requests waiting beyond those; more get 429
};

class EncoderHttpAdapter {
 public:
  // `service` and `metrics` must outlive the adapter.
  EncoderHttpAdapter(EncoderService& service, MetricsRegistry& metrics, EncoderHttpOptions options = {});
  ~EncoderHttpAdapter();

  void RegisterRoutes(HttpServer& server);
  // Blocks until no request is held, or `timeout` passed (false).
  bool WaitIdle(std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  void Accept(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool omniserve_form);
  void Run(const HttpRequest& request, ResponseWriter& writer, bool omniserve_form);
  void Release();

  EncoderService& service_;
  const EncoderHttpOptions options_;
  CounterFamily* requests_;
  Counter* rejected_;
  Gauge* queue_;
  std::atomic<int> held_{0};
  std::mutex mu_;
  std::condition_variable idle_;
  ThreadPool pool_;  // declared last: joined first
};

}  // namespace omni::encoder
