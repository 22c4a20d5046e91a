#include "services/orchestrator/images_api.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "api/json_body.h"
#include "api/openai/openai_types.h"
#include "core/base64.h"
#include "core/utf8.h"
#include "net/http.h"
#include "net/multipart.h"
#include "services/orchestrator/image_stage.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxPromptBytes = 32 << 10;
// One image block: 729 codes, 27 row ends and the markers, with room for the
// call around it.
constexpr int kImageCallTokens = 1024;

// "WxH" -> the nearest ratio; "auto" -> "".
StatusOr<std::string> RatioOfSize(const std::string& size) {
  if (size == "auto") return std::string();
  const size_t x = size.find('x');
  int w = 0, h = 0;
  const char* end = size.data() + size.size();
  const bool ok = x != std::string::npos && std::from_chars(size.data(), size.data() + x, w).ptr == size.data() + x &&
                  std::from_chars(size.data() + x + 1, end, h).ptr == end && w >= 16 && h >= 16 && w <= 16384 &&
                  h <= 16384;
  if (!ok) return JsonFieldError("size", "\"auto\" or WIDTHxHEIGHT, like \"1024x1024\" (16 to 16384 each)");
  return NearestImageRatio(w, h);
}

// One field of either form into `r`; `v` typed by the caller.
Status SetField(const std::string& key, const Json& v, ImagesRequest* r) {
  if (key == "prompt") {
    if (!v.is_string() || v.get<std::string>().empty()) return JsonFieldError(key, "a non-empty string");
    r->prompt = v.get<std::string>();
    if (r->prompt.size() > kMaxPromptBytes) return JsonFieldError(key, "at most 32768 bytes");
  } else if (key == "model" || key == "user") {
    if (!v.is_string()) return JsonFieldError(key, "a string");
    (key == "model" ? r->model : r->user) = v.get<std::string>();
  } else if (key == "n") {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxImagesPerRequest) {
      return JsonFieldError(key, "an integer in [1, 10]");
    }
    r->n = v.get<int>();
  } else if (key == "size") {
    if (!v.is_string()) return JsonFieldError(key, "a string");
    OMNI_ASSIGN_OR_RETURN(r->ratio, RatioOfSize(v.get<std::string>()));
  } else if (key == "response_format") {
    if (!v.is_string() || (v != "url" && v != "b64_json")) return JsonFieldError(key, "\"url\" or \"b64_json\"");
    r->b64_json = v == "b64_json";
  } else if (key == "output_format") {
    if (!v.is_string() || (v != "png" && v != "webp" && v != "jpeg")) {
      return JsonFieldError(key, "\"png\", \"webp\" or \"jpeg\"");
    }
    r->output_format = v.get<std::string>();
  } else if (key == "quality" || key == "style") {
    if (!v.is_string()) return JsonFieldError(key, "a string");  // accepted, no effect
  } else if (key == "seed") {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t{1} << 53)) {
      return JsonFieldError(key, "an integer in [0, 2^53]");
    }
    r->seed = v.get<int64_t>();
  } else if (key == "num_inference_steps") {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 200) {
      return JsonFieldError(key, "an integer in [1, 200]");
    }
    r->steps = v.get<int64_t>();
  } else if (key == "guidance_scale") {
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 2)) return JsonFieldError(key, "in [0, 2]");
    r->guidance = v.get<double>();
  } else if (key == "mask") {
    return InvalidArgument("'mask' is not supported: the model redraws the whole picture").WithParam("mask");
  } else {
    return InvalidArgument("'" + ShownValue(key) +
                           "' is not a field of this request (prompt, model, n, size, response_format, "
                           "output_format, quality, style, user, seed, num_inference_steps, guidance_scale)")
        .WithParam(key);
  }
  return Status::Ok();
}

Status CheckPrompt(const ImagesRequest& r) {
  if (r.prompt.empty()) return InvalidArgument("'prompt' is required").WithParam("prompt");
  return Status::Ok();
}

// A multipart text field as the JSON value its key takes.
StatusOr<Json> TypedFormValue(const std::string& key, const std::string& text) {
  if (!IsValidUtf8(text)) return JsonFieldError(key, "UTF-8 text");
  if (key == "n" || key == "seed" || key == "num_inference_steps" || key == "guidance_scale") {
    Json v = Json::parse(text, nullptr, false);
    if (v.is_discarded() || !v.is_number()) return JsonFieldError(key, "a number");
    return v;
  }
  return Json(text);
}

}  // namespace

StatusOr<ImagesRequest> ParseImagesGenerationRequest(std::string_view body) {
  OMNI_ASSIGN_OR_RETURN(Json j, ParseJsonObjectBody(body));
  ImagesRequest r;
  for (const auto& [key, v] : j.items()) {
    if (key == "stream" && v.is_boolean() && !v.get<bool>()) continue;
    if (key == "stream") return InvalidArgument("streamed image generation is not supported").WithParam("stream");
    OMNI_RETURN_IF_ERROR(SetField(key, v, &r));
  }
  OMNI_RETURN_IF_ERROR(CheckPrompt(r));
  return r;
}

StatusOr<ImagesRequest> ParseImagesEditRequest(std::string_view content_type, std::string_view body) {
  OMNI_ASSIGN_OR_RETURN(std::vector<MultipartPart> parts, ParseMultipartFormData(content_type, body));
  ImagesRequest r;
  const MultipartPart* image = nullptr;
  for (const MultipartPart& part : parts) {
    if (part.name == "image" || part.name == "image[]") {
      if (image != nullptr) {
        return InvalidArgument("one input image is supported; the request has more").WithParam("image");
      }
      image = &part;
      continue;
    }
    if (part.is_file()) {
      if (part.name == "mask") return SetField("mask", Json(), &r);
      return InvalidArgument("'" + ShownValue(part.name) + "' is a file; only 'image' is").WithParam(part.name);
    }
    OMNI_ASSIGN_OR_RETURN(Json v, TypedFormValue(part.name, part.data));
    OMNI_RETURN_IF_ERROR(SetField(part.name, v, &r));
  }
  if (image == nullptr || image->data.empty()) {
    return InvalidArgument("'image' is required: the picture to edit, as a file part").WithParam("image");
  }
  OMNI_RETURN_IF_ERROR(CheckPrompt(r));
  // The media stage sniffs the bytes (a non-image is 415) whatever the type says.
  const std::string type = image->content_type.starts_with("image/") ? image->content_type : "image/png";
  r.image_data_url = "data:" + type + ";base64," + Base64Encode(image->data);
  return r;
}

std::string ImagesChatBody(const ImagesRequest& r) {
  Json content = Json::array();
  if (!r.image_data_url.empty()) content.push_back({{"type", "image_url"}, {"image_url", {{"url", r.image_data_url}}}});
  content.push_back({{"type", "text"}, {"text", r.prompt}});
  Json tool = {{"type", "function"},
               {"function",
                {{"name", openai::kImageTool},
                 {"description", "Draws a picture from its discrete image tokens."},
                 {"parameters",
                  {{"type", "object"},
                   {"properties", {{openai::kImageToolParam, {{"type", "string"}}}}},
                   {"required", Json::array({openai::kImageToolParam})}}}}}};
  Json image_generation = {{"response_format", r.b64_json ? "b64_json" : "url"}, {"output_format", r.output_format}};
  if (!r.ratio.empty()) image_generation["ratio"] = r.ratio;
  if (r.seed) image_generation["seed"] = *r.seed;
  if (r.steps) image_generation["num_inference_steps"] = *r.steps;
  if (r.guidance) image_generation["guidance_scale"] = *r.guidance;
  Json chat = {{"messages", Json::array({{{"role", "user"}, {"content", content}}})},
               {"tools", Json::array({tool})},
               {"tool_choice", {{"type", "function"}, {"function", {{"name", openai::kImageTool}}}}},
               {"n", r.n},
               {"max_tokens", kImageCallTokens},
               {"chat_template_kwargs", {{"skip_reasoning", true}}},
               {"image_generation", image_generation}};
  if (!r.model.empty()) chat["model"] = r.model;
  if (!r.user.empty()) chat["user"] = r.user;
  // The same prompt and seed draw the same picture: the LLM's sampling is
  // seeded too.
  if (r.seed) chat["seed"] = *r.seed;
  return chat.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

class ImagesAnswerWriter final : public ResponseWriter {
 public:
  ImagesAnswerWriter(std::shared_ptr<ResponseWriter> client, bool b64_json)
      : client_(std::move(client)), b64_json_(b64_json) {}

  bool Send(HttpResponse response) override {
    if (response.status != 200) return client_->Send(std::move(response));
    const Json chat = Json::parse(response.body, nullptr, false);
    Json data = Json::array();
    if (chat.is_object() && chat.contains("choices") && chat["choices"].is_array()) {
      for (const Json& choice : chat["choices"]) {
        const Json parts = choice.value("message", Json::object()).value("content_parts", Json::array());
        for (const Json& part : parts) {
          if (!part.is_object() || part.value("type", "") != "image_url") continue;
          const std::string url = part["image_url"].value("url", "");
          if (!b64_json_) {
            data.push_back({{"url", url}});
          } else if (const size_t comma = url.find(";base64,"); comma != std::string::npos) {
            data.push_back({{"b64_json", url.substr(comma + 8)}});
          }
        }
      }
    }
    if (data.empty()) {
      return client_->Send(ErrorResponse(
          Internal("the model drew no image for this request").WithErrorCode("image_decode_failed")));
    }
    Json answer = {{"created", chat.value("created", Json(0))}, {"data", data}};
    if (chat.contains("usage")) answer["usage"] = chat["usage"];
    return client_->Send(JsonResponse(200, answer.dump()));
  }
  // The chat path never streams an Images request; anything else passes.
  bool StartStream(int status, HttpHeaders headers) override { return client_->StartStream(status, std::move(headers)); }
  bool Write(std::string_view chunk) override { return client_->Write(chunk); }
  bool WriteNoWait(std::string_view chunk) override { return client_->WriteNoWait(chunk); }
  bool Finish() override { return client_->Finish(); }
  bool client_gone() const override { return client_->client_gone(); }
  void OnClientGone(std::function<void()> cb) override { client_->OnClientGone(std::move(cb)); }
  const std::string& request_id() const override { return client_->request_id(); }

 private:
  std::shared_ptr<ResponseWriter> client_;
  const bool b64_json_;
};

}  // namespace

std::shared_ptr<ResponseWriter> MakeImagesAnswerWriter(std::shared_ptr<ResponseWriter> client, bool b64_json) {
  return std::make_shared<ImagesAnswerWriter>(std::move(client), b64_json);
}

}  // namespace omni::orchestrator
