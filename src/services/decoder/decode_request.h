// The decoder's request bodies, parsed once at the edge (docs/DECODER.md):
// /v1/decode and OmniServe's /decode and /decode_base64. Untrusted input:
// fuzzed by fuzz/decode_request_fuzz.cc.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "media/image_encode.h"
#include "models/vision_decoder/vision_tokens.h"

namespace omni::decoder {

inline constexpr int kDecodeNumIds = 729;  // a 27 x 27 grid of image ids
inline constexpr int kMaxDecodeSteps = 200;       // OmniServe's bound too
inline constexpr float kMaxDecodeGuidance = 2.f;  // OmniServe's bound
inline constexpr int kMinDecodeSide = 64, kMaxDecodeSide = 2048;

// Which route a request came by: the answer's shape follows it.
enum class DecodeApi { kOmni, kOmniServe, kOmniServeBase64 };

struct DecodeRequest {
  DecodeApi api = DecodeApi::kOmni;
  std::string model;  // empty: the served model
  models::VisionTokens tokens;
  std::optional<int> width, height;  // override the ratio's size (multiples of 16 in [64, 2048])
  std::optional<int> steps;          // [1, 200]; absent: the route's default
  std::optional<float> guidance;     // [0, 2]; absent: 0.75
  std::optional<uint64_t> seed;      // absent: drawn at random and reported
  media::ImageFormat format = media::ImageFormat::kPng;
  int quality = 90;                  // WebP / JPEG
  bool inline_image = false;         // also answer with the image bytes (base64)
  std::string user;                  // the fair queue's key ("" for anonymous)
};

// Request bodies (docs/DECODER.md). /v1/decode: {"model", "tokens": "<|vision_ratio_3:4|>..." |
// {"ratio", "ids"}, "steps", "guidance", "seed", "format", "quality", "width", "height",
// "response_format": "url" | "b64_json", "user"}. OmniServe's /decode and /decode_base64:
// {"vlm_output", "width", "height", "num_inference_steps", "guidance_scale", "seed"} (its S3
// upload fields are accepted and ignored: the image always goes to the store).
// InvalidArgument names the field at fault.
StatusOr<DecodeRequest> ParseDecodeRequest(std::string_view body, int vocab_size = 65536);
StatusOr<DecodeRequest> ParseOmniServeDecodeRequest(std::string_view body, bool base64, int vocab_size = 65536);

}  // namespace omni::decoder
