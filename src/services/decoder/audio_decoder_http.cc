#include "services/decoder/audio_decoder_http.h"

#include <exception>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/log.h"

namespace omni::decoder {

AudioDecoderHttpAdapter::AudioDecoderHttpAdapter(AudioDecoderService& service, MetricsRegistry& metrics,
                                                 AudioDecoderHttpOptions options)
    : service_(service),
      options_(options),
      requests_(&metrics.AddCounter("omni_audio_decoder_requests_total", "Audio decode requests by outcome.",
                                    {"result"})),
      audio_seconds_(&metrics
                          .AddCounter("omni_audio_decoder_audio_seconds_total",
                                      "Seconds of audio answered (rate: real-time factor of the server).")
                          .Get()),
      held_gauge_(&metrics.AddGauge("omni_audio_decoder_requests_held", "Audio decode requests queued or running.")
                       .Get()),
      pool_(static_cast<size_t>(std::max(1, options.workers))) {}

AudioDecoderHttpAdapter::~AudioDecoderHttpAdapter() = default;

void AudioDecoderHttpAdapter::RegisterRoutes(HttpServer& server) {
  auto route = [this](AudioDecodeApi api) {
    return [this, api](HttpRequest r, std::shared_ptr<ResponseWriter> w) { Accept(r, std::move(w), api); };
  };
  server.RouteStreaming(HttpMethod::kPost, "/v1/decode", route(AudioDecodeApi::kOmni));
  server.RouteStreaming(HttpMethod::kPost, "/predictions", route(AudioDecodeApi::kOmniServe));
  server.Route(HttpMethod::kGet, "/v1/models", [this](const HttpRequest&) {
    nlohmann::ordered_json model = {{"id", service_.model_id()}, {"object", "model"}, {"owned_by", "omniserve"}};
    return JsonResponse(200, nlohmann::ordered_json{{"object", "list"}, {"data", {model}}}.dump());
  });
}

void AudioDecoderHttpAdapter::Accept(const HttpRequest& http, std::shared_ptr<ResponseWriter> writer,
                                     AudioDecodeApi api) {
  StatusOr<AudioDecodeRequest> parsed = api == AudioDecodeApi::kOmni
                                            ? ParseAudioDecodeRequest(http.body, service_.num_units())
                                            : ParseOmniServeAudioDecodeRequest(http.body, service_.num_units());
  if (!parsed.ok()) {
    requests_->WithLabels({"invalid"}).Inc();
    OMNI_LOG(kInfo, "request_id={} audio decode refused: {}", http.request_id, parsed.status().ToString());
    writer->Send(ErrorResponse(parsed.status()));
    return;
  }
  const int limit = std::max(1, options_.workers) + std::max(0, options_.max_queue);
  if (held_.fetch_add(1) >= limit) {
    held_.fetch_sub(1);
    requests_->WithLabels({"rejected"}).Inc();
    OMNI_LOG(kInfo, "request_id={} audio decode refused: {} requests held", http.request_id, limit);
    HttpResponse busy = ErrorResponse(
        ResourceExhausted(fmt::format("the audio decoder holds {} requests, its limit; retry shortly", limit))
            .WithErrorCode("server_busy"));
    busy.headers.Set("retry-after", "1");
    writer->Send(std::move(busy));
    return;
  }
  held_gauge_->Inc();
  OMNI_LOG(kInfo, "request_id={} audio decode queued: {} units ({} held)", http.request_id, parsed->units.size(),
           held_.load());
  auto request = std::make_shared<AudioDecodeRequest>(std::move(parsed).value());
  const bool posted = pool_.Post([this, request, writer] {
    Run(*request, *writer);
    Release();
  });
  if (!posted) {
    requests_->WithLabels({"shutdown"}).Inc();
    writer->Send(ErrorResponse(Unavailable("the audio decoder is shutting down").WithErrorCode("server_shutdown")));
    Release();
  }
}

void AudioDecoderHttpAdapter::Run(const AudioDecodeRequest& request, ResponseWriter& writer) {
  const std::string& id = writer.request_id();
  if (writer.client_gone()) {
    requests_->WithLabels({"cancelled"}).Inc();
    OMNI_LOG(kInfo, "request_id={} audio decode cancelled before its turn: the client went away", id);
    return;
  }
  if (closed_.load()) {
    requests_->WithLabels({"shutdown"}).Inc();
    writer.Send(ErrorResponse(Unavailable("the audio decoder is shutting down").WithErrorCode("server_shutdown")));
    return;
  }
  StatusOr<AudioDecodeResult> result = Internal("audio decode did not run");
  std::string answer;
  try {
    result = service_.Decode(request);
    if (result.ok()) answer = AudioDecodeResultJson(*result, request, service_.model_id());
  } catch (const std::exception& e) {
    result = Internal(fmt::format("audio decode failed: {}", e.what()));
  }
  if (!result.ok()) {
    const bool invalid = result.status().code() == StatusCode::kInvalidArgument ||
                         result.status().code() == StatusCode::kNotFound;
    requests_->WithLabels({invalid ? "invalid" : "error"}).Inc();
    OMNI_LOG(kInfo, "request_id={} audio decode failed: {}", id, result.status().ToString());
    writer.Send(ErrorResponse(result.status()));
    return;
  }
  requests_->WithLabels({"ok"}).Inc();
  audio_seconds_->Inc(result->duration);
  OMNI_LOG(kInfo,
           "request_id={} audio decoded {} units={} speaker={} format={} bytes={} seconds={:.2f} vocode={:.1f}ms "
           "encode={:.1f}ms store={:.1f}ms",
           id, request.inline_audio ? std::string("inline") : result->key, result->units, result->speaker,
           media::AudioFormatName(result->format), result->bytes, result->duration, result->times.vocode_ms,
           result->times.encode_ms, result->times.store_ms);
  writer.Send(JsonResponse(200, std::move(answer)));
}

void AudioDecoderHttpAdapter::Release() {
  held_gauge_->Dec();
  if (held_.fetch_sub(1) == 1) {
    std::lock_guard lock(mu_);
    idle_.notify_all();
  }
}

void AudioDecoderHttpAdapter::Close() { closed_ = true; }

bool AudioDecoderHttpAdapter::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return held_.load() == 0; });
}

}  // namespace omni::decoder
