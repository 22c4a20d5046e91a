// The HTTP face of AudioDecoderService: POST /v1/decode, OmniServe's POST
// /predictions (its "ogg" is served as Ogg Opus), GET /v1/models; /health
// and /metrics come from the server.
//
// A request is parsed on the io thread (a malformed body gets its 400 at
// once) and handed to a worker pool, as in the encoder: the workers resolve
// the speaker, encode and store concurrently, and meet in the vocoder's
// batcher, so requests that wait together share one forward. The server
// holds at most workers + max_queue requests; beyond that the answer is 429
// server_busy with Retry-After, at once. A request whose client went away
// before a worker took it is skipped (counted as cancelled). After Close(),
// requests not yet taken answer 503 server_shutdown.
//
// Metrics: omni_audio_decoder_requests_total{result} (ok, invalid, error,
// rejected, cancelled, shutdown), omni_audio_decoder_audio_seconds_total,
// omni_audio_decoder_requests_held; the batcher's and the service's
// histograms are registered by them.
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "core/thread_pool.h"
#include "net/http_server.h"
#include "services/decoder/audio_decoder_service.h"

namespace omni::decoder {

struct AudioDecoderHttpOptions {
  int workers = 8;     // requests handled at once (their forwards meet in the batcher)
  int max_queue = 32;  // requests waiting beyond those; more get 429
};

class AudioDecoderHttpAdapter {
 public:
  // `service` and `metrics` must outlive the adapter.
  AudioDecoderHttpAdapter(AudioDecoderService& service, MetricsRegistry& metrics, AudioDecoderHttpOptions options = {});
  ~AudioDecoderHttpAdapter();

  void RegisterRoutes(HttpServer& server);
  // Requests not yet taken by a worker answer 503 server_shutdown; running ones finish.
  void Close();
  // Blocks until no request is held, or `timeout` passed (false).
  bool WaitIdle(std::chrono::milliseconds timeout = std::chrono::seconds(60));

 private:
  void Accept(const HttpRequest& request, std::shared_ptr<ResponseWriter> writer, AudioDecodeApi api);
  void Run(const AudioDecodeRequest& request, ResponseWriter& writer);
  void Release();

  AudioDecoderService& service_;
  const AudioDecoderHttpOptions options_;
  CounterFamily* requests_;
  Counter* audio_seconds_;
  Gauge* held_gauge_;
  std::atomic<int> held_{0};
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::condition_variable idle_;
  ThreadPool pool_;  // declared last: joined first
};

}  // namespace omni::decoder
