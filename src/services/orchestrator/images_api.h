// The OpenAI Images API on the orchestrator (docs/API.md, "Images"), as a
// translation around the chat path: a request becomes a chat request whose
// only tool, t2i_model_generation, is forced (the LLM writes one image block
// per choice, `n` choices), and the chat answer, its images decoded
// (image_answer.h), becomes the Images answer.
//
//   POST /v1/images/generations  JSON: {"prompt", "model", "n", "size",
//        "response_format", "output_format", "quality", "style", "user",
//        and the extras "seed", "num_inference_steps", "guidance_scale"}
//   POST /v1/images/edits  multipart/form-data: the same fields, and the
//        input picture as the file part "image" (or "image[]"): it goes to
//        the LLM as an image part (image-to-image); "mask" is refused
//
// `size` "WxH" picks the decoder's ratio nearest to W/H (the picture has that
// ratio's own size, e.g. 3:4 -> 656x880); "auto" or none leaves the ratio to
// the model. "quality" and "style" are accepted and have no effect.
// Untrusted input: fuzzed by fuzz/images_request_fuzz.cc.
//
// Thread-safety: pure functions; ImagesAnswerWriter as any ResponseWriter.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "net/http_server.h"

namespace omni::orchestrator {

inline constexpr int kMaxImagesPerRequest = 10;  // OpenAI's bound on `n`

struct ImagesRequest {
  std::string prompt;
  std::string model;  // "": the served LLM
  int n = 1;
  std::string ratio;  // "": the model's choice
  bool b64_json = false;
  std::string output_format = "png";
  std::optional<int64_t> seed;
  std::optional<int64_t> steps;
  std::optional<double> guidance;
  std::string user;
  std::string image_data_url;  // edits: the input picture, as a data: URL
};

// InvalidArgument names the field (param).
StatusOr<ImagesRequest> ParseImagesGenerationRequest(std::string_view body);
StatusOr<ImagesRequest> ParseImagesEditRequest(std::string_view content_type, std::string_view body);

// The chat request body that draws `request`.
std::string ImagesChatBody(const ImagesRequest& request);

// In front of the client's writer: a chat answer with images in becomes the
// Images answer {"created", "data": [{"url"} | {"b64_json"}]}; errors pass
// through as they are.
std::shared_ptr<ResponseWriter> MakeImagesAnswerWriter(std::shared_ptr<ResponseWriter> client, bool b64_json);

}  // namespace omni::orchestrator
