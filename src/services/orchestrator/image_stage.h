// ImageStage: the orchestrator's way to the vision decoder. One image block
// the LLM wrote (the argument of a t2i_model_generation call) becomes one
// `POST GATEWAY/v1/decode` (docs/DECODER.md); the decoder writes the picture
// to the store and the stage answers with the URL the client gets:
//
//   local store   a signed, expiring http URL on the orchestrator's own port
//                 (storage/signed_url.h), from images.public_url or the
//                 request's Host
//   S3 store      the store's presigned GET URL
//   data URL      with "response_format": "b64_json", the bytes inline
//
// Decodes run on a pool of images.max_concurrent threads; more wait there.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "net/http.h"
#include "net/http_client.h"
#include "net/metrics.h"
#include "services/orchestrator/image_options.h"
#include "services/orchestrator/orchestrator_config.h"
#include "storage/object_store.h"
#include "storage/signed_url.h"

namespace omni::orchestrator {

class Upstream;

struct GeneratedImage {
  std::string url;  // what the client gets
  std::string key;  // the object in the store
  int width = 0, height = 0;
  uint64_t seed = 0;
  std::vector<std::string> warnings;  // the decoder's (a ratio it replaced)
};

// The decoder calls of one request, cancelled together when its client goes
// away: each call is dropped, and the decoder (through the gateway) stops
// that generation between steps.
class ImageCancels {
 public:
  // Cancels every call registered, now and later. Thread-safe, non-blocking.
  void Cancel();
  // Keeps `call` to cancel; false (and `call` cancelled) when already cancelled.
  bool Register(std::shared_ptr<HttpCallHandle> call);
  bool cancelled() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;                              // guarded by mu_
  std::vector<std::weak_ptr<HttpCallHandle>> calls_;  // guarded by mu_
};

class ImageStage {
 public:
  // All must outlive the stage; `store` and `signer` may be null when no
  // vision decoder is configured.
  ImageStage(const OrchestratorConfig& config, Upstream& upstream, ObjectStore* store, const ObjectUrlSigner* signer,
             const Clock& clock, MetricsRegistry& metrics);
  ~ImageStage();

  // images.vision_decoder is configured (with a store).
  bool enabled() const;
  // The drain deadline passed: running decoder calls are dropped (their
  // images fail with server_shutdown), and later ones too.
  void Stop();

  // Where the client reaches this orchestrator, for signed URLs:
  // images.public_url, else http://<Host> (a Host that is not a plain
  // host[:port] is refused).
  StatusOr<std::string> PublicBase(const HttpRequest& request) const;

  // One image block through the decoder. Blocks up to images.decode_s.
  // Errors carry OpenAI codes: decoder_busy (429), image_decode_timeout (504),
  // decoder_unavailable (503), image_decode_failed (500: the decoder
  // refused the model's tokens, or answered an error).
  // With `cancels` (may be null) cancelled: Cancelled, the call dropped.
  StatusOr<GeneratedImage> Decode(std::string_view tokens, const ImageOptions& options, const std::string& public_base,
                                  const std::string& request_id, ImageCancels* cancels = nullptr);
  // Decode on the stage's pool; `done` runs there (or at once with
  // server_shutdown once the pool stopped).
  void DecodeAsync(std::string tokens, ImageOptions options, std::string public_base, std::string request_id,
                   std::function<void(StatusOr<GeneratedImage>)> done, std::shared_ptr<ImageCancels> cancels = nullptr);

 private:
  StatusOr<std::string> ClientUrl(const std::string& key, const std::string& public_base) const;

  const OrchestratorConfig& config_;
  Upstream& upstream_;
  ObjectStore* store_;
  const ObjectUrlSigner* signer_;
  const Clock& clock_;
  CounterFamily* images_;  // by result: ok, error
  Histogram* seconds_;
  ImageCancels stopping_;  // every call, cancelled by Stop
  ThreadPool pool_;  // declared last: joined first
};

}  // namespace omni::orchestrator
