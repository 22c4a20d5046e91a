// BenchRunner: drives a Workload against an OpenAI-compatible target and
// records every request. The HTTP side is a small interface so tests (and a
// later gateway benchmark that compares routing policies) can swap it; the
// target is only ever a base URL.
//
// Load shapes:
//   closed loop  `concurrency` workers; each takes the next conversation and
//                runs its turns back to back.
//   open loop    conversations start at Poisson arrival times of
//                `request_rate` per second (later turns follow their answer at
//                once); at most `max_concurrency` run at a time. Arrivals past
//                the cap wait; latencies are timed from the actual send, so
//                the wait shows as lower throughput, not as TTFT.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "net/http.h"
#include "net/http_client.h"
#include "services/loadgen/openai_stream.h"
#include "services/loadgen/stats.h"
#include "services/loadgen/workload.h"

namespace omni::loadgen {

// POSTs a JSON body to a path of the target and streams the response back,
// with HttpClient::Stream's contract. Must be thread-safe.
class StreamingTransport {
 public:
  virtual ~StreamingTransport() = default;
  virtual StatusOr<int> PostStream(std::string_view path, std::string body, const HttpHeaders& headers,
                                   const HttpStreamCallbacks& callbacks) = 0;
};

// The real transport: one HttpClient, keep-alive connections to one target.
class HttpTransport final : public StreamingTransport {
 public:
  // `base_url` is "http://host:port" with an optional "/v1" or trailing "/",
  // which are dropped. `max_connections` bounds pooled idle connections.
  static StatusOr<std::unique_ptr<HttpTransport>> Create(std::string_view base_url, int max_connections,
                                                        std::chrono::milliseconds request_timeout);

  StatusOr<int> PostStream(std::string_view path, std::string body, const HttpHeaders& headers,
                           const HttpStreamCallbacks& callbacks) override;
  const std::string& base_url() const { return base_url_; }

 private:
  HttpTransport(std::string base_url, HttpClientOptions options, std::chrono::milliseconds timeout)
      : base_url_(std::move(base_url)), client_(std::move(options)), timeout_(timeout) {}

  std::string base_url_;
  HttpClient client_;
  std::chrono::milliseconds timeout_;
};

// Normalises a base URL: checks it parses, drops a trailing "/" and "/v1".
StatusOr<std::string> NormalizeBaseUrl(std::string_view base_url);

struct LoadOptions {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  SamplingOptions sampling;
  int concurrency = 1;       // closed loop
  double request_rate = 0;   // > 0: open loop, conversations per second
  int max_concurrency = 256; // open loop: in-flight cap
  uint64_t seed = 0;         // arrival times
  // Sent with every request, e.g. for a gateway under test. Each request also
  // carries `x-session-id: conv-<id>` so session-affinity routing can be tried.
  std::vector<std::pair<std::string, std::string>> headers;
};

Status ValidateLoadOptions(const LoadOptions& options);

// Start times (seconds from 0) of `n` Poisson arrivals at `rate` per second:
// exponential gaps, deterministic for `seed`; the first arrives after one gap.
std::vector<double> PoissonArrivals(int n, double rate, uint64_t seed);

struct RunResult {
  std::vector<RequestRecord> records;  // by conversation, then turn
  double duration_s = 0;               // start of the run to the end of the last response
};

class BenchRunner {
 public:
  // `transport` and `clock` must outlive the runner.
  BenchRunner(StreamingTransport* transport, const Clock* clock, LoadOptions options);

  // Blocks until every request has finished. Thread-safe only in the sense
  // that it may be called again after returning.
  RunResult Run(const Workload& workload);

 private:
  void RunConversation(const Workload& workload, const Conversation& c, Clock::MonoTime run_start,
                       std::vector<RequestRecord>* out);
  RequestRecord SendOne(const std::vector<ChatMessage>& messages, const Conversation& c, int turn,
                        Clock::MonoTime run_start);
  void RunClosedLoop(const Workload& workload, Clock::MonoTime start, std::vector<std::vector<RequestRecord>>* out);
  void RunOpenLoop(const Workload& workload, Clock::MonoTime start, std::vector<std::vector<RequestRecord>>* out);

  StreamingTransport* transport_;
  const Clock* clock_;
  LoadOptions options_;
};

}  // namespace omni::loadgen
