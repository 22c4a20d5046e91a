#include "services/decoder/decoder_service.h"

#include <chrono>
#include <random>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/check.h"
#include "modelfile/tensor_object.h"
#include "storage/content_hash.h"
#include "storage/open_store.h"

namespace omni::decoder {
namespace {

using SteadyClock = std::chrono::steady_clock;

double MsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

uint64_t RandomSeed() {
  std::random_device device;
  const uint64_t bits = (uint64_t{device()} << 32) ^ device();
  return bits & ((uint64_t{1} << 53) - 1);  // exact in a JavaScript number
}

}  // namespace

std::string DecodeResultJson(const DecodeResult& r, const DecodeRequest& request, std::string_view model) {
  nlohmann::ordered_json j;
  if (request.api == DecodeApi::kOmni) {
    j["object"] = "image";
    j["model"] = model;
    j["key"] = r.key;
    j["uri"] = r.uri;
    j["url"] = r.url;
    j["sha256"] = r.sha256;
    j["mime"] = r.mime;
    j["bytes"] = r.bytes;
    j["width"] = r.width;
    j["height"] = r.height;
    j["ratio"] = r.ratio;
    j["steps"] = r.steps;
    j["guidance"] = r.guidance;
    j["seed"] = r.seed;
    j["warnings"] = r.warnings;
    j["timings_ms"] = {{"condition", r.times.condition_ms}, {"denoise", r.times.denoise_ms},
                       {"vae", r.times.vae_ms},             {"encode", r.times.encode_ms},
                       {"store", r.times.store_ms}};
    if (request.inline_image) j["b64_json"] = Base64Encode(r.image_bytes);
    return j.dump();
  }
  // OmniServe's VLMOutputResponse (and /decode_base64's image field).
  j["message"] = "Image generated successfully";
  j["num_images"] = 1;
  j["height"] = r.height;
  j["width"] = r.width;
  j["num_tokens_parsed"] = r.ids;
  j["guidance_scale"] = r.guidance;
  j["seed"] = r.seed;
  j["presigned_url"] = r.url;
  j["s3_path"] = r.uri;
  if (request.api == DecodeApi::kOmniServeBase64) {
    j["image_base64"] = Base64Encode(r.image_bytes);
    j["format"] = "png";
  }
  if (!r.warnings.empty()) j["warnings"] = r.warnings;
  return j.dump();
}

DecoderService::DecoderService(DecoderServiceOptions options, VisionGenerateFn generate)
    : options_(std::move(options)),
      generate_(std::move(generate)),
      steps_(&options_.metrics->AddCounter("omni_decoder_steps_total", "Diffusion steps run (rate: steps/s).").Get()),
      steps_per_second_(&options_.metrics
                             ->AddGauge("omni_decoder_steps_per_second",
                                        "Steps per second of the image being drawn; 0 when none is.")
                             .Get()),
      stage_seconds_(&options_.metrics->AddHistogram(
          "omni_decoder_stage_seconds", "Time per stage of a request: condition, denoise, vae, encode, store.",
          {"stage"}, {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300})) {
  OMNI_CHECK(options_.store != nullptr && generate_) << "decoder service dependencies";
}

StatusOr<DecodeResult> DecoderService::Decode(const DecodeRequest& request,
                                              const std::function<bool()>& keep_going) const {
  if (!request.model.empty() && request.model != options_.model_id) {
    return ModelNotFound(request.model, options_.model_id);
  }
  DecodeResult r;
  r.ratio = request.tokens.ratio;
  r.warnings = request.tokens.warnings;
  r.ids = static_cast<int>(request.tokens.ids.size());
  r.width = request.width.value_or(request.tokens.size.width);
  r.height = request.height.value_or(request.tokens.size.height);
  r.steps = request.steps.value_or(options_.default_steps);
  r.guidance = request.guidance.value_or(options_.default_guidance);
  r.seed = request.seed ? *request.seed : RandomSeed();
  for (int32_t id : request.tokens.ids) {
    if (id >= options_.vocab_size) {
      return InvalidArgument(fmt::format("image id {} is outside this decoder's table of {}", id, options_.vocab_size))
          .WithParam("tokens");
    }
  }
  models::VisionGenerateRequest g{.ids = request.tokens.ids,
                                  .width = r.width,
                                  .height = r.height,
                                  .steps = r.steps,
                                  .guidance = r.guidance,
                                  .seed = r.seed};
  auto last_step = SteadyClock::now();
  models::VisionGenerateHooks hooks;
  hooks.after_step = [&](int) {
    steps_->Inc();
    const double s = MsSince(last_step) / 1e3;
    last_step = SteadyClock::now();
    if (s > 0) steps_per_second_->Set(1.0 / s);
    return !keep_going || keep_going();
  };
  models::VisionGenerateTimings t;
  StatusOr<Tensor> image = generate_(g, hooks, &t);
  steps_per_second_->Set(0);
  if (!image.ok()) return image.status();
  r.times = {.condition_ms = t.condition_s * 1e3, .denoise_ms = t.denoise_s * 1e3, .vae_ms = t.vae_s * 1e3};
  stage_seconds_->WithLabels({"condition"}).Observe(t.condition_s);
  stage_seconds_->WithLabels({"denoise"}).Observe(t.denoise_s);
  stage_seconds_->WithLabels({"vae"}).Observe(t.vae_s);

  auto t0 = SteadyClock::now();
  media::Image rgb{.width = static_cast<int>(image->dim(2)),
                   .height = static_cast<int>(image->dim(1)),
                   .rgb = models::ImageToRgb8(*image)};
  OMNI_ASSIGN_OR_RETURN(std::string bytes, media::EncodeImage(rgb, request.format, request.quality));
  r.times.encode_ms = MsSince(t0);
  stage_seconds_->WithLabels({"encode"}).Observe(r.times.encode_ms / 1e3);
  r.mime = std::string(media::MimeType(request.format));
  r.sha256 = Sha256Hex(bytes);
  r.bytes = bytes.size();

  auto t1 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(r.key, GeneratedMediaKey(options_.model_id, r.sha256,
                                                 media::FileExtension(request.format)));
  const ObjectMetadata meta = {{"width", std::to_string(r.width)}, {"height", std::to_string(r.height)},
                               {"ratio", r.ratio},                 {"steps", std::to_string(r.steps)},
                               {"seed", std::to_string(r.seed)},   {"model", options_.model_id}};
  OMNI_RETURN_IF_ERROR(options_.store->Put(r.key, bytes, {.content_type = r.mime, .metadata = meta}));
  OMNI_ASSIGN_OR_RETURN(r.uri, ObjectUriInStore(options_.store_uri, r.key));
  OMNI_ASSIGN_OR_RETURN(r.url, options_.store->Presign(r.key, PresignMethod::kGet, options_.url_ttl));
  r.times.store_ms = MsSince(t1);
  stage_seconds_->WithLabels({"store"}).Observe(r.times.store_ms / 1e3);
  if (request.inline_image) r.image_bytes = std::move(bytes);
  return r;
}

}  // namespace omni::decoder
