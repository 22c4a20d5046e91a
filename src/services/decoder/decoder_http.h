// The HTTP face of DecoderService: POST /v1/decode, OmniServe's POST /decode
// and /decode_base64, GET /v1/models; /health and /metrics come from the
// server.
//
// A request is parsed on the io thread (malformed bodies get their 400 at
// once) and queued in the FairQueue, which runs one generation at a time,
// fair across the requests' "user". Beyond `max_queue` waiting requests the
// answer is 429 with Retry-After. A client that hangs up is cancelled: before
// its turn, or between two steps of its generation.
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <memory>

#include "net/http_server.h"
#include "services/decoder/decoder_service.h"
#include "services/decoder/fair_queue.h"

namespace omni::decoder {

struct DecoderHttpOptions {
  int max_queue = 8;  // requests waiting behind the running one; more get 429
  int vocab_size = 65536;
};

class DecoderHttpAdapter {
 public:
  // `service` and `metrics` must outlive the adapter.
  DecoderHttpAdapter(DecoderService& service, MetricsRegistry& metrics, DecoderHttpOptions options = {});
  ~DecoderHttpAdapter();
  void RegisterRoutes(HttpServer& server);
  // Stops taking requests: waiting ones get 503 server_shutdown, the running one finishes.
  void Close();
  // Blocks until no request runs or waits.
  void WaitIdle();

 private:
  void Accept(const HttpRequest& request, std::shared_ptr<ResponseWriter> writer, DecodeApi api);
  void Run(const DecodeRequest& request, ResponseWriter& writer);

  DecoderService& service_;
  const DecoderHttpOptions options_;
  CounterFamily* requests_;
  Gauge* waiting_;
  FairQueue queue_;  // declared last: destroyed (and joined) first
};

}  // namespace omni::decoder
