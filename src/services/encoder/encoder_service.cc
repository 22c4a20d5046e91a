#include "services/encoder/encoder_service.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/json_body.h"

#include "core/base64.h"
#include "modelfile/tensor_object.h"
#include "storage/content_hash.h"
#include "storage/open_store.h"

namespace omni::encoder {
namespace {

using SteadyClock = std::chrono::steady_clock;

double MsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

std::string MetaValue(const ObjectMetadata& meta, std::string_view name) {
  for (const auto& [k, v] : meta) {
    if (k == name) return v;
  }
  return {};
}

// The ViT's resize and patch grid, which images and videos record alike.
void AppendGridMetadata(const EncodeResult& r, ObjectMetadata* meta) {
  meta->insert(meta->end(), {{"resized-width", std::to_string(r.resized_width)},
                             {"resized-height", std::to_string(r.resized_height)},
                             {"grid-t", std::to_string(r.grid.t)},
                             {"grid-h", std::to_string(r.grid.h)},
                             {"grid-w", std::to_string(r.grid.w)}});
}

bool ParseSeconds(const std::string& s, double* out) {
  if (s.empty() || s.size() > 24 || s.find_first_not_of("0123456789.") != std::string::npos) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoll(s);
  return true;
}

bool ParseGridMetadata(const ObjectMetadata& m, EncodeResult* r) {
  return ParseInt(MetaValue(m, "resized-width"), &r->resized_width) &&
         ParseInt(MetaValue(m, "resized-height"), &r->resized_height) &&
         ParseInt(MetaValue(m, "grid-t"), &r->grid.t) && ParseInt(MetaValue(m, "grid-h"), &r->grid.h) &&
         ParseInt(MetaValue(m, "grid-w"), &r->grid.w);
}

// OmniServe's audio encoder takes a media_url written in URL-safe base64 too
// (normalize_media_url): decoded when it decodes to an http(s):// or s3://
// URL, else kept as it is.
std::string UrlFromUrlSafeBase64(const std::string& url) {
  if (url.find("://") != std::string::npos || url.starts_with("data:")) return url;
  std::optional<std::string> decoded = Base64UrlDecode(url);
  if (decoded && (decoded->starts_with("http://") || decoded->starts_with("https://") ||
                  decoded->starts_with("s3://"))) {
    return *decoded;
  }
  return url;
}

}  // namespace

StatusOr<EncodeRequest> ParseEncodeRequest(std::string_view body) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObjectBody(body));
  EncodeRequest r;
  if (j.contains("model")) {
    if (!j["model"].is_string()) return JsonFieldError("model", "a string");
    r.model = j["model"].get<std::string>();
  }
  if (!j.contains("media")) return InvalidArgument("'media' is required").WithParam("media");
  const nlohmann::json& media = j["media"];
  if (!media.is_object()) return JsonFieldError("media", "an object with a url");
  if (!media.contains("url") || !media["url"].is_string() || media["url"].get<std::string>().empty()) {
    return JsonFieldError("media.url", "a non-empty string (data:, http(s)://, s3:// or file:// URL)");
  }
  r.url = media["url"].get<std::string>();
  return r;
}

StatusOr<EncodeRequest> ParseOmniServeEncodeRequest(std::string_view body) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObjectBody(body));
  EncodeRequest r;
  const bool has_url = j.contains("media_url") && !j["media_url"].is_null();
  const bool has_b64 = j.contains("media_base64") && !j["media_base64"].is_null();
  if (has_url == has_b64) {
    return InvalidArgument("exactly one of 'media_url' and 'media_base64' is required").WithParam("media_url");
  }
  if (has_url) {
    if (!j["media_url"].is_string() || j["media_url"].get<std::string>().empty()) {
      return JsonFieldError("media_url", "a non-empty string");
    }
    r.url = UrlFromUrlSafeBase64(j["media_url"].get<std::string>());
  } else {
    if (!j["media_base64"].is_string()) return JsonFieldError("media_base64", "a base64 string");
    const std::string b64 = j["media_base64"].get<std::string>();
    // As a data: URL, so the fetcher's size limit applies before decoding
    // (OmniServe's audio encoder also takes a whole data: URL here).
    r.url = b64.starts_with("data:") ? b64 : "data:application/octet-stream;base64," + b64;
  }
  return r;
}

std::string EncodeResultJson(const EncodeResult& r, std::string_view model) {
  nlohmann::ordered_json j;
  j["object"] = "encoding";
  j["model"] = model;
  j["cached"] = r.cached;
  j["key"] = r.key;
  j["uri"] = r.uri;
  j["url"] = r.url;
  j["sha256"] = r.sha256;
  j["rows"] = r.rows;
  j["width"] = r.width;
  j["ids"] = r.ids;
  if (r.type == "audio") {
    j["media"] = {{"type", "audio"}, {"mime", r.mime}, {"seconds", r.seconds}};
  } else {
    j["media"] = {{"type", r.type}, {"mime", r.mime}};
    if (r.type == "video") {
      j["media"]["seconds"] = r.seconds;
      j["media"]["frames"] = r.frames;
    }
    j["media"]["width"] = r.image_width;
    j["media"]["height"] = r.image_height;
    j["resized"] = {{"width", r.resized_width}, {"height", r.resized_height}};
    j["grid"] = {{"t", r.grid.t}, {"h", r.grid.h}, {"w", r.grid.w}};
  }
  j["timings_ms"] = {{"fetch", r.times.fetch_ms}, {"decode", r.times.decode_ms}, {"encode", r.times.encode_ms},
                     {"store", r.times.store_ms}};
  return j.dump();
}

EncoderService::EncoderService(EncoderServiceOptions options, ImageEncodeFn encode)
    : EncoderService(std::move(options), std::move(encode), nullptr, nullptr) {}

EncoderService::EncoderService(EncoderServiceOptions options, AudioEncodeFn encode)
    : EncoderService(std::move(options), nullptr, nullptr, std::move(encode)) {}

EncoderService::EncoderService(EncoderServiceOptions options, ImageEncodeFn image, VideoEncodeFn video)
    : EncoderService(std::move(options), std::move(image), std::move(video), nullptr) {}

EncoderService::EncoderService(EncoderServiceOptions options, ImageEncodeFn image, VideoEncodeFn video,
                               AudioEncodeFn audio)
    : options_(std::move(options)),
      encode_image_(std::move(image)),
      encode_video_(std::move(video)),
      encode_audio_(std::move(audio)),
      cache_hits_(&options_.metrics->AddCounter("omni_encoder_cache_hits_total",
                                                "Requests answered from an object already in the store.")
                       .Get()),
      encoded_(&options_.metrics->AddCounter("omni_encoder_encoded_total", "Media encoded and written.").Get()),
      stage_seconds_(&options_.metrics->AddHistogram(
          "omni_encoder_stage_seconds", "Time per stage of a request: fetch, decode, encode, store.", {"stage"},
          {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})) {
  OMNI_CHECK(options_.store != nullptr && options_.fetcher != nullptr && (encode_image_ || encode_audio_))
      << "encoder service dependencies";
}

Status EncoderService::Describe(EncodeResult* r) const {
  OMNI_ASSIGN_OR_RETURN(r->uri, ObjectUriInStore(options_.store_uri, r->key));
  OMNI_ASSIGN_OR_RETURN(r->url, options_.store->Presign(r->key, PresignMethod::kGet, options_.url_ttl));
  return Status::Ok();
}

StatusOr<EncodeResult> EncoderService::FromStoredObject(const std::string& key, const ObjectInfo& info) const {
  EncodeResult r;
  r.cached = true;
  r.key = key;
  const ObjectMetadata& m = info.metadata;
  // Objects written before audio existed carry no media-type: images.
  const std::string type = MetaValue(m, "media-type");
  r.type = type.empty() ? "image" : type;
  bool complete = ParseInt(MetaValue(m, "rows"), &r.rows) && ParseInt(MetaValue(m, "width"), &r.width) &&
                  ParseInt(MetaValue(m, "ids"), &r.ids);
  if (r.type == "audio") {
    complete = complete && ParseSeconds(MetaValue(m, "seconds"), &r.seconds);
  } else if (r.type == "video") {
    complete = complete && ParseSeconds(MetaValue(m, "seconds"), &r.seconds) &&
               ParseInt(MetaValue(m, "frames"), &r.frames) && ParseInt(MetaValue(m, "video-width"), &r.image_width) &&
               ParseInt(MetaValue(m, "video-height"), &r.image_height) && ParseGridMetadata(m, &r);
  } else {
    complete = complete && r.type == "image" && ParseInt(MetaValue(m, "image-width"), &r.image_width) &&
               ParseInt(MetaValue(m, "image-height"), &r.image_height) && ParseGridMetadata(m, &r);
  }
  if (!complete) return NotFound("the stored object carries no description");
  r.mime = MetaValue(m, "mime");
  r.sha256 = MetaValue(m, "sha256");
  OMNI_RETURN_IF_ERROR(Describe(&r));
  return r;
}

StatusOr<models::VisionEncoding> EncoderService::EncodeImage(const media::FetchedMedia& media, EncodeResult* r,
                                                             ObjectMetadata* meta) const {
  auto t1 = SteadyClock::now();
  media::ImageInfo info;
  OMNI_ASSIGN_OR_RETURN(media::Image image, media::DecodeImage(media.bytes, options_.decode, &info));
  r->times.decode_ms = MsSince(t1);
  stage_seconds_->WithLabels({"decode"}).Observe(r->times.decode_ms / 1e3);
  r->type = "image";
  r->mime = std::string(media::MediaKindInfo(info.kind).mime);
  r->image_width = image.width;
  r->image_height = image.height;
  auto t2 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(models::VisionEncoding e, encode_image_(image));
  r->times.encode_ms = MsSince(t2);
  r->grid = e.grid;
  r->resized_width = e.resized_width;
  r->resized_height = e.resized_height;
  *meta = {
      {"image-width", std::to_string(r->image_width)},
      {"image-height", std::to_string(r->image_height)},
      // A generic name: the object is shared by every request that sends
      // these bytes, so it carries nothing from one client's URL.
      {"filename", "image." + std::string(media::MediaKindInfo(info.kind).extension)},
  };
  AppendGridMetadata(*r, meta);
  return e;
}

StatusOr<models::VisionEncoding> EncoderService::EncodeVideo(const media::FetchedMedia& media, EncodeResult* r,
                                                             ObjectMetadata* meta) const {
  auto t1 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(media::VideoFrames video, media::DecodeVideo(media.bytes, options_.video_decode));
  r->times.decode_ms = MsSince(t1);
  stage_seconds_->WithLabels({"decode"}).Observe(r->times.decode_ms / 1e3);
  if (video.frames.empty()) return InvalidArgument("the video has no frames");
  r->type = "video";
  const media::MediaKindDescription& kind = media::MediaKindInfo(media.kind);
  r->mime = std::string(kind.mime);
  r->seconds = video.seconds;
  r->frames = std::ssize(video.frames);
  r->image_width = video.frames.front().width;
  r->image_height = video.frames.front().height;
  auto t2 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(models::VisionEncoding e, encode_video_(video.frames));
  r->times.encode_ms = MsSince(t2);
  r->grid = e.grid;
  r->resized_width = e.resized_width;
  r->resized_height = e.resized_height;
  *meta = {
      {"seconds", fmt::format("{:.6f}", r->seconds)},
      {"frames", std::to_string(r->frames)},
      {"video-width", std::to_string(r->image_width)},
      {"video-height", std::to_string(r->image_height)},
      {"filename", "video." + std::string(kind.extension)},
  };
  AppendGridMetadata(*r, meta);
  return e;
}

StatusOr<models::AudioEncoding> EncoderService::EncodeAudio(const media::FetchedMedia& media, EncodeResult* r,
                                                            ObjectMetadata* meta) const {
  auto t1 = SteadyClock::now();
  media::AudioInfo info;
  OMNI_ASSIGN_OR_RETURN(media::Audio audio, media::DecodeAudio(media.bytes, options_.audio_decode, &info));
  r->times.decode_ms = MsSince(t1);
  stage_seconds_->WithLabels({"decode"}).Observe(r->times.decode_ms / 1e3);
  r->type = "audio";
  r->mime = std::string(media::MediaKindInfo(info.kind).mime);
  r->seconds = audio.seconds();
  auto t2 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(models::AudioEncoding e, encode_audio_(audio.samples));
  r->times.encode_ms = MsSince(t2);
  *meta = {
      {"seconds", fmt::format("{:.6f}", r->seconds)},
      {"filename", "audio." + std::string(media::MediaKindInfo(info.kind).extension)},
  };
  return e;
}

StatusOr<EncodeResult> EncoderService::Encode(const EncodeRequest& request) const {
  if (!request.model.empty() && request.model != options_.model_id) {
    return ModelNotFound(request.model, options_.model_id);
  }
  auto t0 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(media::FetchedMedia media, options_.fetcher->Fetch(request.url));
  const double fetch_ms = MsSince(t0);
  stage_seconds_->WithLabels({"fetch"}).Observe(fetch_ms / 1e3);
  OMNI_ASSIGN_OR_RETURN(std::string key, EmbeddingKey(options_.model_id, media.sha256));
  // Content-addressed: a described object under the key is this medium's.
  StatusOr<ObjectInfo> head = options_.store->Head(key);
  if (head.ok()) {
    StatusOr<EncodeResult> cached = FromStoredObject(key, *head);
    if (cached.ok()) {
      cache_hits_->Inc();
      cached->times.fetch_ms = fetch_ms;
      return cached;
    }
  } else if (head.status().code() != StatusCode::kNotFound) {
    return head.status();
  }
  EncodeResult r;
  r.key = key;
  r.sha256 = media.sha256;
  r.times.fetch_ms = fetch_ms;
  ObjectMetadata details;
  EmbeddingObject object;
  std::vector<int32_t> ids;
  if (encode_audio_) {
    OMNI_ASSIGN_OR_RETURN(models::AudioEncoding e, EncodeAudio(media, &r, &details));
    object.rows = e.rows.To(DType::kBF16);  // the LLM computes in bf16; half the bytes
    ids = std::move(e.ids);
  } else if (encode_video_ && media::MediaKindInfo(media.kind).cls == media::MediaClass::kVideo) {
    // By the bytes: an image_url part holding a video is a video.
    OMNI_ASSIGN_OR_RETURN(models::VisionEncoding e, EncodeVideo(media, &r, &details));
    object.rows = e.rows.To(DType::kBF16);
  } else {
    OMNI_ASSIGN_OR_RETURN(models::VisionEncoding e, EncodeImage(media, &r, &details));
    object.rows = e.rows.To(DType::kBF16);
    ids = std::move(e.ids);
  }
  stage_seconds_->WithLabels({"encode"}).Observe(r.times.encode_ms / 1e3);
  r.rows = object.rows.dim(0);
  r.width = object.rows.dim(1);
  r.ids = std::ssize(ids);

  auto t3 = SteadyClock::now();
  object.ids = Tensor::Empty({r.ids}, DType::kI32);
  if (r.ids > 0) std::memcpy(object.ids.raw_data(), ids.data(), ids.size() * sizeof(int32_t));
  ObjectMetadata meta = {
      {"media-type", r.type},
      {"rows", std::to_string(r.rows)},
      {"width", std::to_string(r.width)},
      {"ids", std::to_string(r.ids)},
  };
  meta.insert(meta.end(), details.begin(), details.end());
  meta.emplace_back("mime", r.mime);
  meta.emplace_back("sha256", r.sha256);
  for (const auto& [k, v] : meta) object.metadata.emplace_back(k, v);
  object.metadata.emplace_back("model", options_.model_id);
  OMNI_ASSIGN_OR_RETURN(std::string bytes, SerializeEmbeddingObject(object));
  // The store metadata also names the object's own sha256: the LLM keys its
  // prefix cache by it, and the gateway reads it with a HEAD to score
  // requests with this medium without fetching the object.
  ObjectMetadata store_meta = meta;
  store_meta.emplace_back("object-sha256", Sha256Hex(bytes));
  OMNI_RETURN_IF_ERROR(
      options_.store->Put(key, bytes, {.content_type = "application/octet-stream", .metadata = store_meta}));
  r.times.store_ms = MsSince(t3);
  stage_seconds_->WithLabels({"store"}).Observe(r.times.store_ms / 1e3);
  encoded_->Inc();
  OMNI_RETURN_IF_ERROR(Describe(&r));
  return r;
}

}  // namespace omni::encoder
