// The vision decoder server's logic, without sockets: image tokens in, an
// image object in the store out (DESIGN.md, "Life of a request", step 4).
//
//   parse     the model's token string (<|vision_ratio_3:4|><|vision5|>...)
//             or {"ratio", "ids"}; a missing or unknown ratio is 1:1 with a
//             warning in the answer
//   generate  the DiT loop and the VAE (models::VisionDecoder, or its
//             sequence-parallel runner), cancellable between steps
//   encode    PNG (default), WebP or JPEG
//   store     gen/<model>/<sha256>.<ext>, content-addressed by the image's
//             bytes, and a presigned URL
//
// Errors are Status: 400 malformed tokens or fields, 404 unknown model, 499
// cancelled (the client went away), 503 the store or a rank failed.
// Thread-safety: Decode is const and thread-safe when the generate function is.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "models/vision_decoder/vision_decoder.h"
#include "services/decoder/decode_request.h"
#include "net/metrics.h"
#include "storage/object_store.h"

namespace omni::decoder {

// The model behind the service: the pipeline in-process, or the
// sequence-parallel group's rank 0. Returns the [3, H, W] image.
using VisionGenerateFn = std::function<StatusOr<Tensor>(
    const models::VisionGenerateRequest&, const models::VisionGenerateHooks&, models::VisionGenerateTimings*)>;

struct DecoderServiceOptions {
  std::string model_id;            // the served name: requests' "model", and the key's model segment
  ObjectStore* store = nullptr;    // required; outlives the service
  std::string store_uri;           // its URI (for the objects' s3:// / file:// URIs)
  std::chrono::seconds url_ttl{3600};
  int default_steps = 25;          // /v1/decode; OmniServe's /decode keeps its own 50
  float default_guidance = 0.75f;
  int vocab_size = 65536;          // ids must be below it
  MetricsRegistry* metrics = nullptr;  // required
};

struct DecodeStageTimes {
  double condition_ms = 0, denoise_ms = 0, vae_ms = 0, encode_ms = 0, store_ms = 0;
};

struct DecodeResult {
  std::string key, uri, url, sha256, mime, ratio;
  std::string image_bytes;  // kept only when inline_image
  size_t bytes = 0;         // the encoded image's size
  int width = 0, height = 0, steps = 0, ids = 0;
  float guidance = 0;
  uint64_t seed = 0;
  std::vector<std::string> warnings;
  DecodeStageTimes times;
};

// The answer's JSON in the request's API shape.
std::string DecodeResultJson(const DecodeResult& result, const DecodeRequest& request, std::string_view model);

class DecoderService {
 public:
  DecoderService(DecoderServiceOptions options, VisionGenerateFn generate);

  // `keep_going` is asked after every step; false cancels (499).
  StatusOr<DecodeResult> Decode(const DecodeRequest& request, const std::function<bool()>& keep_going = {}) const;
  const std::string& model_id() const { return options_.model_id; }

 private:
  DecoderServiceOptions options_;
  VisionGenerateFn generate_;
  Counter* steps_;
  Gauge* steps_per_second_;
  HistogramFamily* stage_seconds_;
};

}  // namespace omni::decoder
