// The orchestrator's logic, without sockets: it checks each chat request,
// sends it to the gateway and carries the answer back to the client; it
// relays the gateway's model list and reports the health of the stack.
// The HTTP adapter (orchestrator_http.h) only registers routes and runs the
// health probes; the gateway is reached through an injected Upstream, the
// client through a ResponseWriter, so tests drive it with fakes.
//
// A chat request is parsed as the LLM server parses it (one parser,
// api/openai) before any upstream call, so malformed JSON, wrong types and
// bad values get their 400 here. Image parts go through the media stage
// (media_stage.h) on a worker thread: each becomes its embedding object's
// URI in the store, and the body goes to the gateway with those URIs in
// place of the client's; media without an encoder pool (audio, video; images
// when media.vision_encoder is unset) get a 400 naming the part and the pool
// it needs. A text-only body goes to the gateway unchanged. The request id
// travels in x-request-id.
// The answer streams back as it arrives (ResponseRelay); a client that goes
// away cancels the upstream call; an upstream that fails before answering
// gets an OpenAI error (503, or 504 past the LLM stage timeout), and one
// that fails mid-stream ends the stream with an error event and [DONE].
//
// Thread-safety: thread-safe. Chat runs on an io thread and never blocks;
// Models and ProbeComponents block on upstream calls (a worker thread, the
// probe thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "net/http.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/metrics.h"
#include "net/upstream_calls.h"
#include "core/thread_pool.h"
#include "services/orchestrator/image_stage.h"
#include "services/orchestrator/speech_stage.h"
#include "services/orchestrator/media_stage.h"
#include "services/orchestrator/orchestrator_config.h"
#include "storage/object_store.h"

namespace omni::orchestrator {

// The orchestrator's way to the gateway and the components it probes:
// HttpUpstream in production, a fake in tests.
class Upstream {
 public:
  virtual ~Upstream() = default;
  // As HttpClient::StreamAsync: callbacks and `done` run later, on another
  // thread, and must not block; `done` runs exactly once.
  virtual std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest request, HttpStreamCallbacks callbacks,
                                                      std::function<void(StatusOr<int>)> done) = 0;
  // A whole exchange; blocks.
  virtual StatusOr<HttpClientResponse> Request(const HttpClientRequest& request) = 0;
};

// Upstream over two HttpClients: one on the server's io threads for the
// proxied calls, one with a thread of its own for the blocking ones.
class HttpUpstream final : public Upstream {
 public:
  HttpUpstream(HttpClient& async, HttpClient& blocking) : async_(async), blocking_(blocking) {}
  std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest request, HttpStreamCallbacks callbacks,
                                              std::function<void(StatusOr<int>)> done) override {
    return async_.StreamAsync(std::move(request), std::move(callbacks), std::move(done));
  }
  StatusOr<HttpClientResponse> Request(const HttpClientRequest& request) override {
    return blocking_.Request(request);
  }

 private:
  HttpClient& async_;
  HttpClient& blocking_;
};

class OrchestratorService {
 public:
  // `store` may be null (no store configured); `media_client` fetches
  // http(s) media (null: such URLs are refused); `signer` signs the image
  // URLs of a local store (null: none can be made). All must outlive the
  // service.
  OrchestratorService(OrchestratorConfig config, Upstream& upstream, ObjectStore* store, const Clock& clock,
                      MetricsRegistry& metrics, HttpClient* media_client = nullptr,
                      const ObjectUrlSigner* signer = nullptr);
  ~OrchestratorService();

  // POST /v1/chat/completions (and OmniServe's /b/v1/chat/completions).
  void Chat(HttpRequest request, std::shared_ptr<ResponseWriter> writer);
  // POST /v1/images/generations (`edit` false) and /v1/images/edits: the
  // Images API as a chat request with the image tool forced (images_api.h).
  void Images(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool edit);
  // POST /v1/audio/transcriptions: the Transcriptions API as a chat request
  // with the audio and a transcription instruction (transcriptions_api.h).
  void Transcriptions(HttpRequest request, std::shared_ptr<ResponseWriter> writer);
  // POST /v1/audio/speech: the Speech API as a streamed chat request that
  // speaks the text (speech_api.h).
  void Speech(HttpRequest request, std::shared_ptr<ResponseWriter> writer);
  // GET /v1/models: the gateway's list (every pool's models), relayed.
  HttpResponse Models(const HttpRequest& request);

  // Probes the gateway, the store and each configured component once, and
  // keeps the results for Health. Blocks up to the probe timeout per
  // component (they are probed one after another).
  void ProbeComponents();
  // GET /health from the last probes: {"status": "ok" | "degraded" |
  // "unavailable", "components": [{"name", "url", "status": "ok" | "down",
  // "error", "since"}]}; 503 when the gateway (or the store) is down or was
  // never probed, 200 otherwise ("degraded" when another component is down).
  HttpResponse Health() const;

  // The drain deadline passed: ends every chat still running (its stream
  // with an error event, code server_shutdown), and any that arrives later;
  // requests still waiting for their media stage are answered 503
  // server_shutdown without being worked on.
  void StopForShutdown();

  const OrchestratorConfig& config() const { return config_; }

 private:
  struct Call;
  struct Probe {
    std::string name;
    std::string url;           // as reported
    std::string health_url;    // what is probed ("" for the store)
    bool probed = false;
    bool ok = false;
    std::string error;
    Clock::WallTime since{};   // when it entered its current state
  };
  struct Outcomes {
    Counter* ok;
    Counter* upstream_error;  // the gateway answered >= 500
    Counter* rejected;        // refused before any upstream call
    Counter* failed;          // the upstream call failed: an error answer or error event
    Counter* client_gone;
  };

  // Sends `body` to the gateway's chat endpoint and relays the answer.
  void Forward(const HttpRequest& request, std::string body, std::shared_ptr<ResponseWriter> writer);
  // On a media worker: the media parts resolved, then Forward.
  // What a media task leaves to run once its slot is given back (may be empty).
  using MediaThen = std::function<void()>;
  // Runs `task` on the media worker pool within media.max_pending requests
  // at once (429 orchestrator_busy beyond, 503 when shutting down), then what
  // it returns, after its slot is given back.
  void RunMediaTask(const std::string& request_id, const std::shared_ptr<ResponseWriter>& writer,
                    std::function<MediaThen()> task);
  void ResolveMediaAndForward(const HttpRequest& request, const openai::ChatRequest& parsed,
                              std::shared_ptr<ResponseWriter> writer);
  // With image generation configured: `writer` behind an ImageAnswerWriter
  // that decodes the answer's images (image_answer.h); an error for a
  // request whose image options or Host cannot be served.
  StatusOr<std::shared_ptr<ResponseWriter>> WithImages(const HttpRequest& request, const openai::ChatRequest& parsed,
                                                       std::shared_ptr<ResponseWriter> writer);
  // With audio output asked for (modalities: ["text", "audio"]): `writer`
  // behind a SpeechAnswerWriter (speech_answer.h) and *body made to force the
  // LLM's spoken block; `writer` itself otherwise. An error for audio options
  // that cannot be served.
  StatusOr<std::shared_ptr<ResponseWriter>> WithSpeech(const HttpRequest& request, std::string* body,
                                                       std::shared_ptr<ResponseWriter> writer);
  void Done(const std::shared_ptr<Call>& call, StatusOr<int> status);
  // Why `probe` is down, or an empty string when it is up.
  std::string ProbeOne(const Probe& probe);

  const OrchestratorConfig config_;
  Upstream& upstream_;
  ObjectStore* store_;
  const Clock& clock_;
  Outcomes outcomes_;
  Gauge& inflight_;
  Histogram& llm_seconds_;
  GaugeFamily& component_up_;

  mutable std::mutex probes_mu_;
  std::vector<Probe> probes_;  // guarded by probes_mu_

  UpstreamCalls live_;  // chat requests not yet ended, for the drain-deadline hook
  std::atomic<bool> stopping_{false};  // the drain deadline passed
  std::atomic<int64_t> media_pending_{0};  // requests queued for or in the media stage
  MediaStage media_;
  ImageStage images_;
  SpeechStage speech_;
  ThreadPool media_requests_;  // requests in their media stage; declared last: joined first
};

}  // namespace omni::orchestrator
