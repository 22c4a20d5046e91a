#include "services/orchestrator/media_stage.h"

#include <algorithm>
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
  media::MediaFetchOptions options;
  options.max_bytes = static_cast<size_t>(config.media.max_bytes);
  options.timeout = config.media.fetch_timeout;
  options.policy.allow_loopback = config.media.fetch_allow_loopback;
  options.policy.allow_private = config.media.fetch_allow_private;
  options.file_root = "";  // clients name no files here
  options.read_s3 = media::S3ReaderForStore(store, config.store);
  fetcher_ = std::make_unique<media::MediaFetcher>(std::move(options), fetch_client);
}

MediaStage::~MediaStage() = default;

bool MediaStage::Serves(ContentKind kind) const {
  if (store_ == nullptr) return false;
  switch (kind) {
    case ContentKind::kImage:
    case ContentKind::kVideo:
      return !config_.media.vision_encoder.empty();
    case ContentKind::kAudio:
      return !config_.media.audio_encoder.empty();
    case ContentKind::kText:
      break;
  }
  return false;
}

StatusOr<std::vector<ResolvedMedium>> MediaStage::Resolve(const openai::ChatRequest& request,
                                                          const std::string& request_id) {
  const Deadline deadline = SteadyClock::now() + config_.media.fetch_timeout + config_.media.encode_timeout;
  std::vector<std::future<StatusOr<ResolvedMedium>>> pending;
  for (const openai::MediaPart& part : request.media) {
    pending.push_back(
        pool_.Submit([this, &part, &request_id, deadline] { return ResolvePart(part, request_id, deadline); }));
  }
  std::vector<ResolvedMedium> resolved;
  Status first_error = Status::Ok();
  for (size_t i = 0; i < pending.size(); ++i) {
    // Every part finishes before the request moves on (the tasks hold
    // references into `request`), whatever one of them threw.
    StatusOr<ResolvedMedium> r = Internal("the media stage failed");
    try {
      r = pending[i].get();
    } catch (const std::exception& e) {
      r = Internal(std::string("the media stage failed: ") + e.what());
    }
    if (!r.ok()) {
      parts_->WithLabels({"error"}).Inc();
      if (first_error.ok()) {
        const std::string param = PartParam(request.media[i]);
        first_error = Status(r.status()).Annotate(param).WithParam(param);
      }
      continue;
    }
    resolved.push_back(std::move(r).value());
  }
  if (!first_error.ok()) return first_error;
  return resolved;
}

StatusOr<ResolvedMedium> MediaStage::ResolvePart(const openai::MediaPart& part, const std::string& request_id,
                                                 Deadline deadline) {
  if (stopping_.load()) {
    return Unavailable("the orchestrator is shutting down").WithErrorCode("server_shutdown");
  }
  if (SteadyClock::now() >= deadline) {
    return DeadlineExceeded("the request's media stage ran past media.fetch_timeout_ms + media.encode_s")
        .WithErrorCode("media_timeout");
  }
  const bool audio_part = part.kind == ContentKind::kAudio;
  auto t0 = SteadyClock::now();
  StatusOr<media::FetchedMedia> fetched = fetcher_->Fetch(part.url);
  if (!fetched.ok()) {
    // A client's http(s) URL that does not answer as it should (refused,
    // reset, timed out, 5xx) is the request's fault, as OpenAI treats it: a
    // 400, not our 503. (Our own store's failures, s3://, stay 503.)
    const StatusCode code = fetched.status().code();
    if ((code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded) && part.url.starts_with("http")) {
      return InvalidArgument(fmt::format("could not download the {}: {}", audio_part ? "audio" : "image",
                                         fetched.status().message()))
          .WithErrorCode(audio_part ? "invalid_audio_url" : "invalid_image_url");
    }
    return fetched.status();
  }
  media::FetchedMedia medium = std::move(fetched).value();
  seconds_->WithLabels({"fetch"}).Observe(SecondsSince(t0));
  if (medium.bytes.empty()) return InvalidArgument(fmt::format("the {} part's data is empty (0 bytes)", part.part_type));
  const media::MediaKindDescription& kind = media::MediaKindInfo(medium.kind);
  const std::string_view wanted = audio_part ? "audio" : "an image or a video";
  if (kind.cls == media::MediaClass::kUnknown) {
    return Status(StatusCode::kUnsupportedMedia,
                  fmt::format("the {} part's data is not {} ({})", part.part_type, wanted,
                              media::DescribeUnknownBytes(medium.bytes)));
  }
  // An audio part may hold a video container (its soundtrack is the audio:
  // WebM/Opus and Matroska recordings sniff as video); an image or video
  // part never holds audio.
  const bool fits = audio_part ? kind.cls != media::MediaClass::kImage : kind.cls != media::MediaClass::kAudio;
  if (!fits) {
    return Status(StatusCode::kUnsupportedMedia,
                  fmt::format("the {} part's data is {} ({}); send {} in this part", part.part_type,
                              media::MediaClassName(kind.cls), kind.name, wanted));
  }
  const media::MediaClass cls = audio_part ? media::MediaClass::kAudio : kind.cls;
  const Encoder encoder = cls == media::MediaClass::kAudio ? Encoder{config_.media.audio_encoder, "audio encoder"}
                                                            : Encoder{config_.media.vision_encoder, "vision encoder"};
  if (encoder.model.empty()) {
    return InvalidArgument(fmt::format("the {} part's data is {} ({}), which needs a {} pool; this deployment has "
                                       "none (media.{} is not configured)",
                                       part.part_type, media::MediaClassName(kind.cls), kind.name, encoder.name,
                                       cls == media::MediaClass::kAudio ? "audio_encoder" : "vision_encoder"))
        .WithErrorCode("media_pool_missing");
  }
  // The same bytes may go to either encoder (a WebM as input_audio and as
  // video_url): one lookup per medium and encoder.
  const std::string inflight_key = encoder.model + "/" + medium.sha256;
  // One lookup per distinct medium at a time: a part whose bytes are being
  // looked up or encoded already waits for that answer.
  std::promise<StatusOr<ResolvedMedium>> mine;
  Shared shared;
  bool leader = false;
  {
    std::lock_guard lock(inflight_mu_);
    auto [it, inserted] = inflight_.try_emplace(inflight_key);
    if (inserted) it->second = mine.get_future().share();
    shared = it->second;
    leader = inserted;
  }
  if (!leader) {
    // Within this request's own deadline, whatever the first one's.
    if (shared.wait_until(deadline) != std::future_status::ready) {
      return DeadlineExceeded("the request's media stage ran past media.fetch_timeout_ms + media.encode_s")
          .WithErrorCode("media_timeout");
    }
    StatusOr<ResolvedMedium> r = shared.get();
    if (r.ok()) parts_->WithLabels({"shared"}).Inc();
    return r;
  }
  StatusOr<ResolvedMedium> r = Internal("the media stage failed");
  try {
    StatusOr<std::string> uri = LookUpOrEncode(medium, encoder, request_id, deadline);
    if (uri.ok()) {
      r = ResolvedMedium{std::move(uri).value(), cls};
    } else {
      r = uri.status();
    }
  } catch (const std::exception& e) {  // bad_alloc: the medium's waiters must still hear
    r = Internal(std::string("the media stage failed: ") + e.what());
  }
  {
    std::lock_guard lock(inflight_mu_);
    inflight_.erase(inflight_key);
  }
  mine.set_value(r);
  return r;
}

StatusOr<std::string> MediaStage::LookUpOrEncode(const media::FetchedMedia& medium, const Encoder& encoder,
                                                 const std::string& request_id, Deadline deadline) {
  const auto store_error = [this](const Status& s) {
    return Unavailable(fmt::format("the object store ({}) failed: {}", store_->uri(), s.message()))
        .WithErrorCode("store_unavailable");
  };
  OMNI_ASSIGN_OR_RETURN(std::string key, EmbeddingKey(encoder.model, medium.sha256));
  StatusOr<ObjectInfo> head = store_->Head(key);
  if (head.ok()) {
    parts_->WithLabels({"cached"}).Inc();
    return ObjectUriInStore(config_.store, key);
  }
  if (head.status().code() != StatusCode::kNotFound) return store_error(head.status());
  auto t1 = SteadyClock::now();
  // The bytes go through the store, once: the encoder reads them there.
  const media::MediaKindDescription& kind = media::MediaKindInfo(medium.kind);
  const std::string media_key = "media/" + medium.sha256 + "." + std::string(kind.extension);
  if (StatusOr<ObjectInfo> present = store_->Head(media_key); !present.ok()) {
    if (present.status().code() != StatusCode::kNotFound) return store_error(present.status());
    if (Status put = store_->Put(media_key, medium.bytes, {.content_type = std::string(kind.mime)}); !put.ok()) {
      return store_error(put);
    }
  }
  OMNI_ASSIGN_OR_RETURN(std::string media_uri, ObjectUriInStore(config_.store, media_key));
  OMNI_ASSIGN_OR_RETURN(std::string object_key, Encode(media_uri, encoder, request_id, deadline));
  seconds_->WithLabels({"encode"}).Observe(SecondsSince(t1));
  if (object_key != key) {
    return Unavailable(fmt::format("the {} wrote {} where {} was expected (is its model name {}?)", encoder.name,
                                   object_key, key, encoder.model))
        .WithErrorCode("encoder_failed");
  }
  parts_->WithLabels({"encoded"}).Inc();
  return ObjectUriInStore(config_.store, key);
}

StatusOr<std::string> MediaStage::Encode(const std::string& media_uri, const Encoder& encoder,
                                         const std::string& request_id, Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  const std::chrono::milliseconds timeout = std::min(config_.media.encode_timeout, left);
  if (timeout.count() <= 0) {
    return DeadlineExceeded("the request's media stage ran past media.fetch_timeout_ms + media.encode_s")
        .WithErrorCode("media_timeout");
  }
  nlohmann::json body = {{"model", encoder.model}, {"media", {{"url", media_uri}}}};
  HttpClientRequest up{.method = HttpMethod::kPost, .url = config_.gateway + "/v1/encode", .body = body.dump(),
                       .timeout = timeout};
  up.headers.Set("content-type", "application/json");
  up.headers.Set("x-request-id", request_id);
  StatusOr<HttpClientResponse> r = upstream_.Request(up);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kDeadlineExceeded) {
      return DeadlineExceeded(fmt::format("the {} did not answer within {} ms", encoder.name, timeout.count()))
          .WithErrorCode("encoder_timeout");
    }
    return Unavailable(fmt::format("the {} could not be reached through the gateway: {}", encoder.name,
                                   r.status().message()))
        .WithErrorCode("encoder_unavailable");
  }
  nlohmann::json answer = nlohmann::json::parse(r->body, nullptr, false);
  std::string why;
  if (answer.is_object() && answer.contains("error") && answer["error"].is_object() &&
      answer["error"].contains("message") && answer["error"]["message"].is_string()) {
    why = answer["error"]["message"].get<std::string>();
    // The encoder names the object it read, our store's; the client never
    // saw that URI and needs no map of our store.
    for (size_t at = why.find(media_uri); at != std::string::npos; at = why.find(media_uri, at)) {
      why.replace(at, media_uri.size(), "the medium");
    }
  }
  if (r->status != 200) {
    // Only the medium's own faults (undecodable, too many pixels, an
    // unsupported format) are the client's; anything else is the encoder's
    // or the deployment's, whatever its status.
    if (r->status == 400 || r->status == 413 || r->status == 415 || r->status == 422) {
      return Status(StatusCodeFromHttp(r->status), fmt::format("the {} refused the medium: {}", encoder.name, why));
    }
    if (r->status == 429) {
      return ResourceExhausted(fmt::format("the {} is busy; retry later", encoder.name)).WithErrorCode("encoder_busy");
    }
    OMNI_LOG(kWarn, "orchestrator: the {} answered HTTP {} for {}: {}", encoder.name, r->status, media_uri, why);
    return Unavailable(fmt::format("the {} failed (HTTP {})", encoder.name, r->status)).WithErrorCode("encoder_failed");
  }
  if (!answer.is_object() || !answer.contains("key") || !answer["key"].is_string()) {
    return Unavailable(fmt::format("the {}'s answer names no object", encoder.name)).WithErrorCode("encoder_failed");
  }
  return answer["key"].get<std::string>();
}

}  // namespace omni::orchestrator
