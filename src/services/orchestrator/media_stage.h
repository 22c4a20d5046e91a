// The orchestrator's media step (DESIGN.md, "Life of a request", step 2):
// each media part of a chat request (image, video, audio) becomes a
// reference to its embedding object, which the LLM server then injects.
//
//   fetch    once, by the media layer: data:, http(s) under the fetch
//            policy (no loopback or private addresses unless configured),
//            s3:// of the configured store; file:// is refused (a client
//            names no files on this machine); kind sniffed, bytes hashed
//   route    by what the bytes are, not by the part's type: images and
//            videos to the vision encoder pool (an image_url holding an mp4
//            is a video), audio to the audio encoder pool; an audio part
//            (input_audio, audio_url) must hold audio or a container with a
//            soundtrack (WebM/Opus recordings sniff as video), an image or
//            video part an image or a video (415 otherwise)
//   lookup   HEAD emb/<encoder model>/<sha256>.safetensors: present -> done,
//            no encoder call
//   encode   the bytes are written once to media/<sha256>.<ext> in the store
//            and the encoder pool is asked, through the gateway, to encode
//            that object (POST /v1/encode); it writes the embedding object
//            under the key above
// All parts of a request run at once, within one deadline (fetch_timeout +
// encode_s from the request's start). Parts with the same bytes, in one
// request or in concurrent ones, share one lookup and one encoder call (the
// first runs it, the others wait for its answer). The result, per part, is
// the object's URI in the store (s3://bucket/key or file:///dir/key) and
// the medium's class, which become the part the LLM is sent
// ({"type": "<class>_url", "<class>_url": {"url": URI}}).
//
// Errors name the part ("messages[1].content[0]: ...") and keep the cause's
// class: the medium's own problems (corrupt, too large, not an image, a
// refused or unanswering URL) are 4xx; a medium whose encoder pool is not
// configured is 400 media_pool_missing; a store or encoder that fails is a
// 503 (store_unavailable, encoder_unavailable, encoder_failed) or 504.
// Thread-safety: Resolve is thread-safe and blocks; call it off the io threads.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/openai/openai_types.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "media/media_fetch.h"
#include "net/http_client.h"
#include "net/metrics.h"
#include "services/orchestrator/orchestrator_config.h"
#include "storage/object_store.h"

namespace omni::orchestrator {

class Upstream;

// One media part, resolved.
struct ResolvedMedium {
  std::string uri;                                  // the embedding object in the store
  media::MediaClass cls = media::MediaClass::kImage;  // what the bytes are
};

class MediaStage {
 public:
  // `upstream`, `store` and `metrics` must outlive the stage; `store` may be
  // null only when no vision encoder is configured.
  MediaStage(const OrchestratorConfig& config, Upstream& upstream, ObjectStore* store, HttpClient* fetch_client,
             MetricsRegistry& metrics);
  ~MediaStage();

  // Whether a media part of this kind can be served (an encoder pool for it
  // is configured).
  bool Serves(ContentKind kind) const;

  // One resolved medium per media part of `request`, in order.
  StatusOr<std::vector<ResolvedMedium>> Resolve(const openai::ChatRequest& request, const std::string& request_id);

  // The drain deadline passed: parts not yet started fail at once with
  // server_shutdown (those running finish within their timeouts).
  void Stop() { stopping_.store(true); }

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  using Shared = std::shared_future<StatusOr<ResolvedMedium>>;
  // An encoder pool: its model name and what to call it in messages.
  struct Encoder {
    std::string model;
    std::string_view name;  // "vision encoder", "audio encoder"
  };

  StatusOr<ResolvedMedium> ResolvePart(const openai::MediaPart& part, const std::string& request_id,
                                       Deadline deadline);
  // HEAD, else store and encode: the embedding object's URI for `medium`.
  StatusOr<std::string> LookUpOrEncode(const media::FetchedMedia& medium, const Encoder& encoder,
                                       const std::string& request_id, Deadline deadline);
  StatusOr<std::string> Encode(const std::string& media_uri, const Encoder& encoder, const std::string& request_id,
                               Deadline deadline);

  const OrchestratorConfig& config_;
  Upstream& upstream_;
  ObjectStore* store_;
  std::unique_ptr<media::MediaFetcher> fetcher_;
  CounterFamily* parts_;          // by result: cached, encoded, shared, error
  HistogramFamily* seconds_;      // by stage: fetch, encode
  std::atomic<bool> stopping_{false};
  std::mutex inflight_mu_;
  std::unordered_map<std::string, Shared> inflight_;  // by encoder/sha256: lookups running; guarded by inflight_mu_
  ThreadPool pool_;               // one task per part; declared last: joined first
};

}  // namespace omni::orchestrator
