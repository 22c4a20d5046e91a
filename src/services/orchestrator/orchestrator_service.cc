#include "services/orchestrator/orchestrator_service.h"

#include <cstdio>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/openai/openai_parse.h"
#include "core/json_string.h"
#include "core/log.h"
#include "net/response_relay.h"
#include "services/orchestrator/client_url.h"
#include "services/orchestrator/image_answer.h"
#include "services/orchestrator/images_api.h"
#include "services/orchestrator/speech_api.h"
#include "services/orchestrator/speech_answer.h"
#include "services/orchestrator/speech_options.h"
#include "services/orchestrator/transcriptions_api.h"

namespace omni::orchestrator {
namespace {

// The encoder pool a media part needs.
std::string_view PoolFor(ContentKind kind) {
  switch (kind) {
    case ContentKind::kImage:
    case ContentKind::kVideo:
      return "vision encoder";
    case ContentKind::kAudio:
      return "audio encoder";
    case ContentKind::kText:
      break;
  }
  return "encoder";
}

// The first media part no encoder pool serves, refused (before anything is
// fetched; the media stage checks again once the bytes say what they are).
Status RefuseUnservedMedia(const openai::ChatRequest& request, const MediaStage& media) {
  for (const openai::MediaPart& part : request.media) {
    if (media.Serves(part.kind)) continue;
    const std::string param =
        "messages[" + std::to_string(part.message_index) + "].content[" + std::to_string(part.part_index) + "]";
    const bool audio = part.kind == ContentKind::kAudio;
    return InvalidArgument(param + " is an " + part.part_type + " part, which needs a " +
                           std::string(PoolFor(part.kind)) + " pool; this deployment has none (media." +
                           (audio ? "audio_encoder" : "vision_encoder") + " is not configured)")
        .WithParam(param)
        .WithErrorCode("media_pool_missing");
  }
  return Status::Ok();
}

// The chat body with each media part replaced by a reference to its
// embedding object, as the part the LLM server takes for the medium's class
// ({"type": "audio_url", "audio_url": {"url": URI}} for an input_audio
// part; an image_url part holding a video becomes a video_url part). The
// body parsed once already, so this cannot fail on its syntax.
StatusOr<std::string> WithMediaUris(const std::string& body, const openai::ChatRequest& request,
                                    const std::vector<ResolvedMedium>& resolved) {
  // Ordered: the client's key order survives, so the LLM's prompt (and the
  // gateway's prefix scoring) sees the request as it was written.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(body, nullptr, false);
  if (j.is_discarded()) return Internal("the chat body no longer parses");
  for (size_t i = 0; i < request.media.size(); ++i) {
    const openai::MediaPart& part = request.media[i];
    nlohmann::ordered_json& content = j["messages"][part.message_index]["content"][part.part_index];
    const std::string type = std::string(media::MediaClassName(resolved[i].cls)) + "_url";
    if (type == part.part_type && content[part.part_type].is_object()) {
      content[part.part_type]["url"] = resolved[i].uri;  // other fields ("detail") kept
    } else {
      content = {{"type", type}, {type, {{"url", resolved[i].uri}}}};
    }
  }
  return j.dump();
}

Status ShuttingDown() {
  return Unavailable("the orchestrator is shutting down: the request was stopped at the drain deadline")
      .WithErrorCode("server_shutdown");
}

std::string Seconds(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

std::vector<double> StageBuckets() { return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}; }

}  // namespace

// One chat request's upstream call. The relay is used by the upstream
// exchange's callbacks and then by Done, in turn (the client's io thread).
struct OrchestratorService::Call : UpstreamCall {
  explicit Call(std::shared_ptr<ResponseWriter> writer) : relay(std::move(writer)) {}

  std::string request_id;
  ResponseRelay relay;
  Clock::MonoTime start{};
};

OrchestratorService::OrchestratorService(OrchestratorConfig config, Upstream& upstream, ObjectStore* store,
                                         const Clock& clock, MetricsRegistry& metrics, HttpClient* media_client,
                                         const ObjectUrlSigner* signer)
    : config_(std::move(config)),
      upstream_(upstream),
      store_(store),
      clock_(clock),
      inflight_(metrics.AddGauge("orchestrator_requests_in_flight", "Chat requests being answered.").Get()),
      llm_seconds_(metrics
                       .AddHistogram("orchestrator_stage_duration_seconds",
                                     "Time per stage of a chat request (llm: the gateway call, whole).", {"stage"},
                                     StageBuckets())
                       .WithLabels({"llm"})),
      component_up_(metrics.AddGauge("orchestrator_component_up",
                                     "1 if the component answered its last health probe, else 0.", {"component"})),
      media_(config_, upstream, store, media_client, metrics),
      images_(config_, upstream, store, signer, clock, metrics),
      speech_(config_, upstream, store, signer, clock, metrics),
      media_requests_(4) {
  auto& requests = metrics.AddCounter(
      "orchestrator_requests_total",
      "Chat requests by outcome: ok, upstream_error (the gateway answered >= 500), rejected (refused before any "
      "upstream call), failed (the upstream call failed), client_gone.",
      {"outcome"});
  outcomes_ = Outcomes{&requests.WithLabels({"ok"}), &requests.WithLabels({"upstream_error"}),
                       &requests.WithLabels({"rejected"}), &requests.WithLabels({"failed"}),
                       &requests.WithLabels({"client_gone"})};
  probes_.push_back(Probe{.name = "gateway", .url = config_.gateway, .health_url = config_.gateway + "/health"});
  if (store_ != nullptr) probes_.push_back(Probe{.name = "store", .url = store_->uri()});
  for (const Component& c : config_.components) {
    probes_.push_back(Probe{.name = c.name, .url = c.url, .health_url = c.url + "/health"});
  }
  for (const Probe& p : probes_) component_up_.WithLabels({p.name}).Set(0);
}

OrchestratorService::~OrchestratorService() = default;

void OrchestratorService::Chat(HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
  const log::RequestLog log(request.request_id);
  StatusOr<openai::ChatRequest> parsed = openai::ParseChatRequest(request.body, openai::MediaForm::kRawMedia);
  Status refusal = parsed.ok() ? RefuseUnservedMedia(*parsed, media_) : parsed.status();
  if (refusal.ok()) {
    StatusOr<std::shared_ptr<ResponseWriter>> wrapped = WithImages(request, *parsed, writer);
    if (wrapped.ok()) {
      writer = std::move(wrapped).value();
    } else {
      refusal = wrapped.status();
    }
  }
  if (refusal.ok()) {
    // Outermost: the speech tags leave the answer before anything else reads it.
    StatusOr<std::shared_ptr<ResponseWriter>> wrapped = WithSpeech(request, &request.body, writer);
    if (wrapped.ok()) {
      writer = std::move(wrapped).value();
    } else {
      refusal = wrapped.status();
    }
  }
  if (!refusal.ok()) {
    outcomes_.rejected->Inc();
    log.Info("orchestrator: refused: {}", refusal.message());
    writer->Send(ErrorResponse(refusal));
    return;
  }
  if (parsed->media.empty()) {
    std::string body = std::move(request.body);
    Forward(request, std::move(body), std::move(writer));
    return;
  }
  if (std::ssize(parsed->media) > config_.media.max_parts) {
    outcomes_.rejected->Inc();
    writer->Send(ErrorResponse(InvalidArgument(fmt::format("the request has {} media parts; at most {} are "
                                                           "accepted (media.max_parts)",
                                                           parsed->media.size(), config_.media.max_parts))
                                   .WithParam("messages")
                                   .WithErrorCode("too_many_media_parts")));
    return;
  }
  // Fetching and encoding block: off the io thread, a bounded number at once.
  auto shared_request = std::make_shared<HttpRequest>(std::move(request));
  auto shared_parsed = std::make_shared<openai::ChatRequest>(std::move(parsed).value());
  RunMediaTask(shared_request->request_id, writer, [this, shared_request, shared_parsed, writer]() -> MediaThen {
    ResolveMediaAndForward(*shared_request, *shared_parsed, writer);
    return nullptr;
  });
}

void OrchestratorService::RunMediaTask(const std::string& request_id, const std::shared_ptr<ResponseWriter>& writer,
                                       std::function<MediaThen()> task) {
  if (media_pending_.fetch_add(1) >= config_.media.max_pending) {
    media_pending_.fetch_sub(1);
    outcomes_.rejected->Inc();
    HttpResponse busy = ErrorResponse(
        ResourceExhausted(fmt::format("{} requests with media are being prepared (media.max_pending); retry later",
                                      config_.media.max_pending))
            .WithErrorCode("orchestrator_busy"));
    busy.headers.Set("retry-after", "1");
    writer->Send(std::move(busy));
    return;
  }
  const bool posted = media_requests_.Post([this, request_id, writer, task = std::move(task)]() {
    MediaThen then;
    try {
      then = task();
    } catch (const std::exception& e) {  // bad_alloc: answered, and the slot given back
      OMNI_LOG(kError, "request_id={} orchestrator: media stage: {}", request_id, e.what());
      writer->Send(ErrorResponse(Internal("the orchestrator could not prepare the request's media")));
    }
    media_pending_.fetch_sub(1);
    if (then) then();
  });
  if (!posted) {
    media_pending_.fetch_sub(1);
    writer->Send(ErrorResponse(ShuttingDown()));
  }
}

void OrchestratorService::Speech(HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
  StatusOr<SpeechApiRequest> speech = ParseSpeechApiRequest(request.body);
  if (speech.ok() && !speech_.enabled()) {
    speech = InvalidArgument("this deployment speaks no answers: speech.audio_decoder is not configured")
                 .WithErrorCode("audio_output_unavailable");
  }
  if (speech.ok() && speech->model.empty()) {
    speech->model = config_.images.llm_model;
    if (speech->model.empty()) {
      speech = InvalidArgument("'model' is required: this deployment names no default (images.llm_model)")
                   .WithParam("model");
    }
  }
  if (!speech.ok()) {
    outcomes_.rejected->Inc();
    log::RequestLog(request.request_id).Info("orchestrator: speech: refused: {}", speech.status().message());
    writer->Send(ErrorResponse(speech.status()));
    return;
  }
  request.body = SpeechApiChatBody(*speech, speech->model);
  Chat(std::move(request), MakeSpeechApiWriter(std::move(writer), *speech));
}

void OrchestratorService::Transcriptions(HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
  // Parsing decodes the audio (to check it and learn its duration): off the
  // io thread, counted with the requests in their media stage; the chat
  // request it becomes takes a slot of its own after this one is given back.
  auto shared = std::make_shared<HttpRequest>(std::move(request));
  RunMediaTask(shared->request_id, writer, [this, shared, writer]() -> MediaThen {
    StatusOr<TranscriptionRequest> t =
        ParseTranscriptionRequest(shared->headers.GetOr("content-type", ""), shared->body, TranscriptionLimits{});
    if (t.ok() && config_.media.audio_encoder.empty()) {
      t = InvalidArgument("this deployment transcribes no audio: media.audio_encoder is not configured")
              .WithErrorCode("media_pool_missing");
    }
    std::string model = t.ok() ? t->model : std::string();
    if (t.ok() && model.empty()) {
      model = config_.images.llm_model;
      if (model.empty()) {
        t = InvalidArgument("'model' is required: this deployment names no default (images.llm_model)")
                .WithParam("model");
      }
    }
    if (!t.ok()) {
      outcomes_.rejected->Inc();
      log::RequestLog(shared->request_id).Info("orchestrator: transcriptions: refused: {}", t.status().message());
      writer->Send(ErrorResponse(t.status()));
      return nullptr;
    }
    shared->body = TranscriptionChatBody(*t, model);
    return [this, shared, writer, format = t->format, seconds = t->seconds, language = t->language]() {
      Chat(std::move(*shared), MakeTranscriptionAnswerWriter(writer, format, seconds, language));
    };
  });
}

void OrchestratorService::Images(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool edit) {
  StatusOr<ImagesRequest> images =
      edit ? ParseImagesEditRequest(request.headers.GetOr("content-type", ""), request.body)
           : ParseImagesGenerationRequest(request.body);
  if (images.ok() && !images_.enabled()) {
    images = InvalidArgument("this deployment draws no images: images.vision_decoder is not configured")
                 .WithErrorCode("image_generation_unavailable");
  }
  if (images.ok() && images->model.empty()) {
    images->model = config_.images.llm_model;
    if (images->model.empty()) {
      images = InvalidArgument("'model' is required: this deployment names no default (images.llm_model)")
                   .WithParam("model");
    }
  }
  if (!images.ok()) {
    outcomes_.rejected->Inc();
    log::RequestLog(request.request_id).Info("orchestrator: images: refused: {}", images.status().message());
    writer->Send(ErrorResponse(images.status()));
    return;
  }
  request.body = ImagesChatBody(*images);
  Chat(std::move(request), MakeImagesAnswerWriter(std::move(writer), images->b64_json));
}

StatusOr<std::shared_ptr<ResponseWriter>> OrchestratorService::WithImages(const HttpRequest& request,
                                                                          const openai::ChatRequest& parsed,
                                                                          std::shared_ptr<ResponseWriter> writer) {
  bool offers_image_tool = false;
  for (const openai::ToolSpec& tool : parsed.tool_specs) offers_image_tool = offers_image_tool || tool.name == openai::kImageTool;
  if (!images_.enabled()) {
    if (!offers_image_tool) return writer;  // the answer is relayed as it comes
    return InvalidArgument(std::string("the request offers the tool ") + std::string(openai::kImageTool) +
                           ", which draws through a vision decoder pool; this deployment has none "
                           "(images.vision_decoder is not configured)")
        .WithParam("tools")
        .WithErrorCode("image_generation_unavailable");
  }
  // Every answer goes through the writer, tool or not: no image text reaches
  // the client even when the model writes a block unasked.
  OMNI_ASSIGN_OR_RETURN(ImageOptions options, ParseImageOptions(request.body));
  std::string public_base;
  if (!options.data_url && config_.store.starts_with("file://")) {
    StatusOr<std::string> base = images_.PublicBase(request);
    // Without the tool an image is unlikely (a block the model writes
    // unasked): a bad Host then only makes its URL relative.
    if (!base.ok() && offers_image_tool) return base.status();
    if (base.ok()) public_base = std::move(base).value();
  }
  const bool errors_as_text = options.errors_as_text;
  auto cancels = std::make_shared<ImageCancels>();
  auto decode = [this, options = std::move(options), public_base = std::move(public_base),
                 request_id = request.request_id, cancels](std::string tokens,
                                                           std::function<void(StatusOr<GeneratedImage>)> done) {
    images_.DecodeAsync(std::move(tokens), options, public_base, request_id, std::move(done), cancels);
  };
  return std::shared_ptr<ResponseWriter>(std::make_shared<ImageAnswerWriter>(
      std::move(writer), std::move(decode), errors_as_text, [cancels] { cancels->Cancel(); }));
}

StatusOr<std::shared_ptr<ResponseWriter>> OrchestratorService::WithSpeech(const HttpRequest& request,
                                                                          std::string* body,
                                                                          std::shared_ptr<ResponseWriter> writer) {
  OMNI_ASSIGN_OR_RETURN(std::optional<SpeechRequestOptions> asked, ParseSpeechOptions(*body));
  if (!asked) return writer;
  if (!speech_.enabled()) {
    return InvalidArgument("this deployment speaks no answers: speech.audio_decoder is not configured")
        .WithParam("modalities")
        .WithErrorCode("audio_output_unavailable");
  }
  SpeechAnswerOptions options{.format = asked->format,
                              .chunk_units = config_.speech.chunk_units,
                              .lookahead_units = config_.speech.lookahead_units};
  options.speaker = asked->speaker ? *asked->speaker
                                   : (asked->voice.empty() ? SpeakerSpec{} : speech_.VoiceSpeaker(asked->voice));
  options.right_context = [this, speaker = options.speaker] { return speech_.RightContext(speaker); };
  std::string public_base;
  if (config_.store.starts_with("file://")) {
    OMNI_ASSIGN_OR_RETURN(public_base, PublicBase(request, config_.speech.public_url));
  }
  OMNI_ASSIGN_OR_RETURN(*body, ForceAudioBody(*body));
  auto decode = [this, public_base, request_id = request.request_id](
                    SpeechJob job, std::function<void(StatusOr<SpokenAudio>)> done) {
    speech_.DecodeAsync(std::move(job), public_base, request_id, std::move(done));
  };
  auto store = [this, public_base, format = options.format](std::string_view pcm) {
    return speech_.Store(pcm, format, public_base);
  };
  return std::shared_ptr<ResponseWriter>(
      std::make_shared<SpeechAnswerWriter>(std::move(writer), std::move(decode), std::move(store), std::move(options)));
}

void OrchestratorService::ResolveMediaAndForward(const HttpRequest& request, const openai::ChatRequest& parsed,
                                                 std::shared_ptr<ResponseWriter> writer) {
  const log::RequestLog log(request.request_id);
  // Queued when the drain deadline passed: answered, not worked on.
  StatusOr<std::vector<ResolvedMedium>> resolved = stopping_.load()
                                                      ? StatusOr<std::vector<ResolvedMedium>>(ShuttingDown())
                                                      : media_.Resolve(parsed, request.request_id);
  StatusOr<std::string> body = resolved.ok() ? WithMediaUris(request.body, parsed, *resolved) : resolved.status();
  if (!body.ok()) {
    const StatusCode code = body.status().code();
    const bool client_fault = code == StatusCode::kInvalidArgument || code == StatusCode::kPayloadTooLarge ||
                              code == StatusCode::kUnsupportedMedia || code == StatusCode::kPermissionDenied ||
                              code == StatusCode::kNotFound;
    (client_fault ? outcomes_.rejected : outcomes_.failed)->Inc();
    log.Info("orchestrator: media: {}", body.status().ToString());
    writer->Send(ErrorResponse(body.status()));
    return;
  }
  Forward(request, std::move(body).value(), std::move(writer));
}

void OrchestratorService::Forward(const HttpRequest& request, std::string body,
                                  std::shared_ptr<ResponseWriter> writer) {
  auto call = std::make_shared<Call>(std::move(writer));
  call->request_id = request.request_id;
  call->start = clock_.Now();
  HttpClientRequest up{.method = HttpMethod::kPost,
                       .url = config_.gateway + "/v1/chat/completions",
                       .headers = EndToEndHeaders(request.headers),
                       .body = std::move(body),
                       .timeout = config_.timeouts.llm};
  up.headers.Set("x-request-id", request.request_id);
  up.headers.Set("x-forwarded-for", ForwardedFor(request));

  // Arrived after the drain-deadline hook ran: cancelled as soon as it starts.
  live_.Add(call);
  inflight_.Inc();
  std::weak_ptr<Call> weak = call;
  call->relay.writer().OnClientGone([weak] {
    if (auto c = weak.lock()) c->ClientGone();
  });
  call->SetUpstream(upstream_.StreamAsync(std::move(up), call->relay.Callbacks(call),
                                          [this, call](StatusOr<int> status) { Done(call, std::move(status)); }));
}

void OrchestratorService::Done(const std::shared_ptr<Call>& call, StatusOr<int> status) {
  live_.Remove(call.get());
  inflight_.Dec();
  llm_seconds_.Observe(std::chrono::duration<double>(clock_.Now() - call->start).count());
  const auto [client_gone, shutting_down] = call->flags();
  ResponseRelay& relay = call->relay;
  if (status.ok()) {
    relay.Deliver();
    (relay.status() < 500 ? outcomes_.ok : outcomes_.upstream_error)->Inc();
    return;
  }
  const log::RequestLog log(call->request_id);
  if (client_gone) {
    outcomes_.client_gone->Inc();
    log.Info("orchestrator: the client went away; the gateway call was cancelled");
    return;
  }
  outcomes_.failed->Inc();
  const std::string why = status.status().message();
  Status error;
  if (shutting_down) {
    error = ShuttingDown();
  } else if (status.status().code() == StatusCode::kDeadlineExceeded) {
    error = DeadlineExceeded("the LLM stage did not finish within timeouts.llm_s (" + Seconds(config_.timeouts.llm) +
                             " s): " + why)
                .WithErrorCode("llm_timeout");
  } else if (!relay.responded()) {
    error = Unavailable("the gateway at " + config_.gateway + " did not answer: " + why)
                .WithErrorCode("gateway_unavailable");
  } else {
    error = Unavailable("the gateway's answer broke off mid-stream: " + why).WithErrorCode("upstream_failed");
  }
  log.Warn("orchestrator: {}", error.message());
  if (!relay.responded()) {
    relay.Fail(error);
  } else if (relay.event_stream()) {
    relay.EndEventStream(error);
  } else {
    relay.Cut();
  }
}

void OrchestratorService::StopForShutdown() {
  stopping_.store(true);
  media_.Stop();
  images_.Stop();
  speech_.Stop();
  // Each ends through Done, with Cancelled.
  const size_t stopped = live_.ShutdownAll();
  OMNI_LOG(kInfo, "orchestrator: drain deadline: stopping {} chat requests", stopped);
}

HttpResponse OrchestratorService::Models(const HttpRequest& request) {
  HttpClientRequest up{.url = config_.gateway + "/v1/models", .timeout = config_.timeouts.models};
  up.headers.Set("x-request-id", request.request_id);
  StatusOr<HttpClientResponse> r = upstream_.Request(up);
  if (!r.ok()) {
    Status error = r.status().code() == StatusCode::kDeadlineExceeded
                       ? DeadlineExceeded("the gateway did not list its models within timeouts.models_ms (" +
                                          std::to_string(config_.timeouts.models.count()) + " ms)")
                       : Unavailable("the gateway at " + config_.gateway + " did not answer: " + r.status().message())
                             .WithErrorCode("gateway_unavailable");
    log::RequestLog(request.request_id).Warn("orchestrator: /v1/models: {}", error.message());
    return ErrorResponse(error);
  }
  if (r->status == 200) {
    // Clients of the chat API get the models they can chat with: the LLM
    // pools'. Encoders and decoders are this stack's internals.
    nlohmann::ordered_json list = nlohmann::ordered_json::parse(r->body, nullptr, false);
    if (list.is_object() && list.contains("data") && list["data"].is_array()) {
      nlohmann::ordered_json kept = nlohmann::ordered_json::array();
      for (auto& m : list["data"]) {
        if (!m.is_object() || !m.contains("role") || m["role"] == "llm") kept.push_back(std::move(m));
      }
      list["data"] = std::move(kept);
      return JsonResponse(200, list.dump());
    }
  }
  return HttpResponse{.status = r->status, .headers = EndToEndHeaders(r->headers), .body = std::move(r->body)};
}

std::string OrchestratorService::ProbeOne(const Probe& probe) {
  if (probe.health_url.empty()) {
    // The store: reachable if a HEAD is answered, found or not.
    StatusOr<ObjectInfo> head = store_->Head("omniserve-health-probe");
    if (head.ok() || head.status().code() == StatusCode::kNotFound) return "";
    return head.status().ToString();
  }
  StatusOr<HttpClientResponse> r =
      upstream_.Request(HttpClientRequest{.url = probe.health_url, .timeout = config_.timeouts.probe});
  if (!r.ok()) return r.status().ToString();
  if (r->status != 200) return "/health answered " + std::to_string(r->status);
  return "";
}

void OrchestratorService::ProbeComponents() {
  std::vector<Probe> probes;
  {
    std::lock_guard lock(probes_mu_);
    probes = probes_;
  }
  std::vector<std::string> errors;
  for (const Probe& p : probes) errors.push_back(ProbeOne(p));
  std::lock_guard lock(probes_mu_);
  for (size_t i = 0; i < probes_.size(); ++i) {
    Probe& p = probes_[i];
    const bool ok = errors[i].empty();
    if (!p.probed || ok != p.ok) {
      p.since = clock_.WallNow();
      if (ok) {
        OMNI_LOG(kInfo, "orchestrator: {} ({}) is up", p.name, p.url);
      } else {
        OMNI_LOG(kWarn, "orchestrator: {} ({}) is down: {}", p.name, p.url, errors[i]);
      }
    }
    p.probed = true;
    p.ok = ok;
    p.error = std::move(errors[i]);
    component_up_.WithLabels({p.name}).Set(ok ? 1 : 0);
  }
}

HttpResponse OrchestratorService::Health() const {
  std::lock_guard lock(probes_mu_);
  bool essential_down = false, any_down = false;
  std::string components;
  for (const Probe& p : probes_) {
    const bool ok = p.probed && p.ok;
    any_down = any_down || !ok;
    // Without the gateway or the store no request can be served.
    if (!ok && (p.name == "gateway" || p.name == "store")) essential_down = true;
    components += components.empty() ? "{\"name\":" : ",{\"name\":";
    AppendJsonString(p.name, &components);
    components += ",\"url\":";
    AppendJsonString(p.url, &components);
    components += ok ? ",\"status\":\"ok\"" : ",\"status\":\"down\"";
    if (!ok) {
      components += ",\"error\":";
      AppendJsonString(p.probed ? p.error : "not probed yet", &components);
    }
    if (p.probed) {
      char buf[48];
      std::snprintf(buf, sizeof(buf), ",\"since\":%.3f",
                    std::chrono::duration<double>(p.since.time_since_epoch()).count());
      components += buf;
    }
    components += "}";
  }
  const char* status = essential_down ? "unavailable" : any_down ? "degraded" : "ok";
  return JsonResponse(essential_down ? 503 : 200,
                      std::string("{\"status\":\"") + status + "\",\"components\":[" + components + "]}");
}

}  // namespace omni::orchestrator
