// What a client may ask of the images of one chat request: the body's
// optional "image_generation" object (docs/API.md, "Image output"):
//   {"response_format": "url" | "b64_json", "output_format": "png" | "webp" | "jpeg",
//    "seed": 0..2^53, "num_inference_steps": 1..200, "guidance_scale": 0..2,
//    "ratio": "3:4", "on_error": "error" | "text"}
// Untrusted input: fuzzed by fuzz/images_request_fuzz.cc.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace omni::orchestrator {

struct ImageOptions {
  bool data_url = false;       // "response_format": "b64_json"
  std::string format = "png";  // "output_format"
  std::optional<uint64_t> seed;
  std::optional<int> steps;
  std::optional<double> guidance;
  std::string ratio;            // "" : the model's choice; else replaces it ("3:4")
  bool errors_as_text = false;  // "on_error": "text": a failed image is an error field, the text still answered
};

// The body's "image_generation" object (absent: the defaults). InvalidArgument
// names the field (param "image_generation.seed" ...). `body` parsed once
// already as a chat request.
StatusOr<ImageOptions> ParseImageOptions(std::string_view body);

// The ratio ("W:H", one the decoder draws) nearest to `width`x`height` in
// log-aspect; for the Images API's `size`.
std::string NearestImageRatio(int width, int height);

}  // namespace omni::orchestrator
