#include "services/orchestrator/media_stage.h"

#include <chrono>
#include <future>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "modelfile/tensor_object.h"
#include "services/orchestrator/orchestrator_service.h"
#include "storage/open_store.h"

namespace omni::orchestrator {
namespace {

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

std::string PartParam(const openai::MediaPart& part) {
  return "messages[" + std::to_string(part.message_index) + "].content[" + std::to_string(part.part_index) + "]";
}

}  // namespace

MediaStage::MediaStage(const OrchestratorConfig& config, Upstream& upstream, ObjectStore* store,
                       HttpClient* fetch_client, MetricsRegistry& metrics)
    : config_(config),
      upstream_(upstream),
      store_(store),
      parts_(&metrics.AddCounter("orchestrator_media_parts_total",
                                 "Media parts by result: cached (the store held its embedding), encoded, error.",
                                 {"result"})),
      seconds_(&metrics.AddHistogram("orchestrator_media_stage_seconds",
                                     "Time per media part and stage: fetch (and hash), encode (store and encoder).",
                                     {"stage"}, {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120})),
      pool_(16) {
  media::MediaFetchOptions options{
      .max_bytes = static_cast<size_t>(config.media.max_bytes),
      .timeout = config.media.fetch_timeout,
      .policy = {.allow_loopback = config.media.fetch_allow_loopback,
                 .allow_private = config.media.fetch_allow_private},
      .file_root = "",  // clients name no files here
      .read_s3 = media::S3ReaderForStore(store, config.store),
  };
  fetcher_ = std::make_unique<media::MediaFetcher>(std::move(options), fetch_client);
}

MediaStage::~MediaStage() = default;

bool MediaStage::Serves(ContentKind kind) const {
  return kind == ContentKind::kImage && !config_.media.vision_encoder.empty() && store_ != nullptr;
}

StatusOr<std::vector<std::string>> MediaStage::Resolve(const openai::ChatRequest& request,
                                                       const std::string& request_id) {
  std::vector<std::future<StatusOr<std::string>>> pending;
  for (const openai::MediaPart& part : request.media) {
    pending.push_back(pool_.Submit([this, &part, &request_id] { return ResolvePart(part, request_id); }));
  }
  std::vector<std::string> uris;
  Status first_error = Status::Ok();
  for (size_t i = 0; i < pending.size(); ++i) {
    StatusOr<std::string> r = pending[i].get();  // every part finishes before the request moves on
    if (!r.ok()) {
      parts_->WithLabels({"error"}).Inc();
      if (first_error.ok()) {
        const std::string param = PartParam(request.media[i]);
        first_error = Status(r.status()).Annotate(param).WithParam(param);
      }
      continue;
    }
    uris.push_back(std::move(r).value());
  }
  if (!first_error.ok()) return first_error;
  return uris;
}

StatusOr<std::string> MediaStage::ResolvePart(const openai::MediaPart& part, const std::string& request_id) {
  auto t0 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(media::FetchedMedia medium, fetcher_->Fetch(part.url));
  seconds_->WithLabels({"fetch"}).Observe(SecondsSince(t0));
  if (medium.bytes.empty()) return InvalidArgument(fmt::format("the {} part's data is empty (0 bytes)", part.part_type));
  const media::MediaKindDescription& kind = media::MediaKindInfo(medium.kind);
  if (kind.cls != media::MediaClass::kImage) {
    return Status(StatusCode::kUnsupportedMedia,
                  medium.kind == media::MediaKind::kUnknown
                      ? fmt::format("the {} part's data is not an image ({})", part.part_type,
                                    media::DescribeUnknownBytes(medium.bytes))
                      : fmt::format("the {} part's data is {} ({}); this deployment understands images here",
                                    part.part_type, media::MediaClassName(kind.cls), kind.name));
  }
  OMNI_ASSIGN_OR_RETURN(std::string key, EmbeddingKey(config_.media.vision_encoder, medium.sha256));
  StatusOr<ObjectInfo> head = store_->Head(key);
  if (head.ok()) {
    parts_->WithLabels({"cached"}).Inc();
    return ObjectUriInStore(config_.store, key);
  }
  if (head.status().code() != StatusCode::kNotFound) return head.status();
  auto t1 = SteadyClock::now();
  // The bytes go through the store, once: the encoder reads them there.
  const std::string media_key = "media/" + medium.sha256 + "." + std::string(kind.extension);
  if (StatusOr<ObjectInfo> present = store_->Head(media_key); !present.ok()) {
    if (present.status().code() != StatusCode::kNotFound) return present.status();
    OMNI_RETURN_IF_ERROR(store_->Put(media_key, medium.bytes, {.content_type = std::string(kind.mime)}));
  }
  OMNI_ASSIGN_OR_RETURN(std::string media_uri, ObjectUriInStore(config_.store, media_key));
  OMNI_ASSIGN_OR_RETURN(std::string object_key, Encode(media_uri, request_id));
  seconds_->WithLabels({"encode"}).Observe(SecondsSince(t1));
  if (object_key != key) {
    return Internal(fmt::format("the vision encoder wrote {} where {} was expected (is its model name {}?)",
                                object_key, key, config_.media.vision_encoder));
  }
  parts_->WithLabels({"encoded"}).Inc();
  return ObjectUriInStore(config_.store, key);
}

StatusOr<std::string> MediaStage::Encode(const std::string& media_uri, const std::string& request_id) {
  nlohmann::json body = {{"model", config_.media.vision_encoder}, {"media", {{"url", media_uri}}}};
  HttpClientRequest up{.method = HttpMethod::kPost, .url = config_.gateway + "/v1/encode", .body = body.dump(),
                       .timeout = config_.media.encode_timeout};
  up.headers.Set("content-type", "application/json");
  up.headers.Set("x-request-id", request_id);
  StatusOr<HttpClientResponse> r = upstream_.Request(up);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kDeadlineExceeded) {
      return DeadlineExceeded(fmt::format("the vision encoder did not answer within media.encode_s ({} s)",
                                          config_.media.encode_timeout.count() / 1000))
          .WithErrorCode("encoder_timeout");
    }
    return Unavailable("the vision encoder could not be reached through the gateway: " + r.status().message())
        .WithErrorCode("encoder_unavailable");
  }
  nlohmann::json answer = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status != 200) {
    std::string message = "the vision encoder answered HTTP " + std::to_string(r->status);
    if (answer.is_object() && answer.contains("error") && answer["error"].contains("message") &&
        answer["error"]["message"].is_string()) {
      message = "the vision encoder refused the image: " + answer["error"]["message"].get<std::string>();
    }
    // The medium's own faults stay 4xx; the encoder's are a bad gateway.
    if (r->status >= 400 && r->status < 500 && r->status != 404 && r->status != 429) {
      return Status(StatusCodeFromHttp(r->status), message);
    }
    if (r->status == 429) return ResourceExhausted(message).WithErrorCode("encoder_busy");
    return Unavailable(message).WithErrorCode("encoder_failed");
  }
  if (!answer.is_object() || !answer.contains("key") || !answer["key"].is_string()) {
    return Unavailable("the vision encoder's answer names no object").WithErrorCode("encoder_failed");
  }
  return answer["key"].get<std::string>();
}

}  // namespace omni::orchestrator
