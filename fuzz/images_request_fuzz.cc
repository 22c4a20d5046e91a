// libFuzzer target for the orchestrator's image request bodies, which a
// client sends: the Images API's JSON (/v1/images/generations) and
// multipart (/v1/images/edits) bodies, and a chat body's "image_generation"
// options. The input's first line is the multipart Content-Type, the rest
// the body.
//
// For any input: no crash or out-of-bounds read; a refusal says why and
// names the field; an accepted request is inside its documented ranges and
// becomes a chat body that is JSON with the image tool forced.
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "services/orchestrator/image_options.h"
#include "services/orchestrator/images_api.h"

namespace {

void CheckAccepted(const omni::orchestrator::ImagesRequest& r) {
  using namespace omni::orchestrator;
  OMNI_CHECK(!r.prompt.empty());
  OMNI_CHECK(r.n >= 1 && r.n <= kMaxImagesPerRequest);
  OMNI_CHECK(r.output_format == "png" || r.output_format == "webp" || r.output_format == "jpeg");
  if (r.steps) OMNI_CHECK(*r.steps >= 1 && *r.steps <= 200);
  if (r.seed) OMNI_CHECK(*r.seed >= 0 && *r.seed <= (int64_t{1} << 53));
  const nlohmann::json chat = nlohmann::json::parse(ImagesChatBody(r), nullptr, false);
  OMNI_CHECK(chat.is_object());
  OMNI_CHECK(chat["tool_choice"]["function"]["name"] == "t2i_model_generation");
  OMNI_CHECK(chat["n"] == r.n);
  // The chat body's own options parse back to what the request asked.
  omni::StatusOr<ImageOptions> options = ParseImageOptions(chat.dump());
  OMNI_CHECK(options.ok());
  OMNI_CHECK(options->ratio == r.ratio && options->data_url == r.b64_json && options->format == r.output_format);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  using namespace omni::orchestrator;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view content_type = nl == std::string_view::npos ? input : input.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  for (std::string_view json_body : {input, body}) {
    StatusOr<ImagesRequest> r = ParseImagesGenerationRequest(json_body);
    if (r.ok()) {
      CheckAccepted(*r);
    } else {
      OMNI_CHECK(!r.status().message().empty());
    }
    StatusOr<ImageOptions> o = ParseImageOptions(json_body);
    if (o.ok()) {
      if (o->steps) OMNI_CHECK(*o->steps >= 1 && *o->steps <= 200);
      if (o->guidance) OMNI_CHECK(*o->guidance >= 0 && *o->guidance <= 2);
    } else {
      OMNI_CHECK(o.status().param().starts_with("image_generation"));
    }
  }
  StatusOr<ImagesRequest> edit = ParseImagesEditRequest(content_type, body);
  if (edit.ok()) {
    CheckAccepted(*edit);
    OMNI_CHECK(edit->image_data_url.starts_with("data:image/"));
  } else {
    OMNI_CHECK(!edit.status().message().empty());
  }
  return 0;
}
