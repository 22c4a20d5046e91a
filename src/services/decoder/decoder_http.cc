#include "services/decoder/decoder_http.h"

#include <exception>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/log.h"

namespace omni::decoder {

DecoderHttpAdapter::DecoderHttpAdapter(DecoderService& service, MetricsRegistry& metrics, DecoderHttpOptions options)
    : service_(service),
      options_(options),
      requests_(&metrics.AddCounter("omni_decoder_requests_total", "Decode requests by outcome.", {"result"})),
      waiting_(&metrics.AddGauge("omni_decoder_queue_waiting", "Decode requests waiting for their turn.").Get()),
      queue_({.max_waiting = static_cast<size_t>(std::max(0, options.max_queue))}) {}

DecoderHttpAdapter::~DecoderHttpAdapter() = default;

void DecoderHttpAdapter::RegisterRoutes(HttpServer& server) {
  auto route = [this](DecodeApi api) {
    return [this, api](HttpRequest r, std::shared_ptr<ResponseWriter> w) { Accept(r, std::move(w), api); };
  };
  server.RouteStreaming(HttpMethod::kPost, "/v1/decode", route(DecodeApi::kOmni));
  server.RouteStreaming(HttpMethod::kPost, "/decode", route(DecodeApi::kOmniServe));
  server.RouteStreaming(HttpMethod::kPost, "/decode_base64", route(DecodeApi::kOmniServeBase64));
  server.Route(HttpMethod::kGet, "/v1/models", [this](const HttpRequest&) {
    nlohmann::ordered_json model = {{"id", service_.model_id()}, {"object", "model"}, {"owned_by", "omniserve"}};
    return JsonResponse(200, nlohmann::ordered_json{{"object", "list"}, {"data", {model}}}.dump());
  });
}

void DecoderHttpAdapter::Accept(const HttpRequest& http, std::shared_ptr<ResponseWriter> writer, DecodeApi api) {
  StatusOr<DecodeRequest> parsed = api == DecodeApi::kOmni
                                       ? ParseDecodeRequest(http.body, options_.vocab_size)
                                       : ParseOmniServeDecodeRequest(http.body, api == DecodeApi::kOmniServeBase64,
                                                                     options_.vocab_size);
  if (!parsed.ok()) {
    requests_->WithLabels({"invalid"}).Inc();
    OMNI_LOG(kInfo, "request_id={} decode refused: {}", http.request_id, parsed.status().ToString());
    writer->Send(ErrorResponse(parsed.status()));
    return;
  }
  auto request = std::make_shared<DecodeRequest>(std::move(parsed).value());
  waiting_->Inc();  // before Submit: the worker may take the job at once
  const bool queued = queue_.Submit(
      request->user,
      [this, request, writer] {
        waiting_->Dec();
        Run(*request, *writer);
      },
      [this, writer] {
        waiting_->Dec();
        requests_->WithLabels({"shutdown"}).Inc();
        writer->Send(ErrorResponse(Unavailable("the decoder is shutting down").WithErrorCode("server_shutdown")));
      });
  if (!queued) {
    waiting_->Dec();
    requests_->WithLabels({"rejected"}).Inc();
    HttpResponse busy = ErrorResponse(
        ResourceExhausted(fmt::format("the decoder's queue is full ({} waiting); retry shortly", options_.max_queue))
            .WithErrorCode("server_busy"));
    busy.headers.Set("retry-after", "5");
    writer->Send(std::move(busy));
    return;
  }
  OMNI_LOG(kInfo, "request_id={} decode queued ({} waiting)", http.request_id, queue_.waiting());
}

void DecoderHttpAdapter::Run(const DecodeRequest& request, ResponseWriter& writer) {
  const std::string& id = writer.request_id();
  if (writer.client_gone()) {
    requests_->WithLabels({"cancelled"}).Inc();
    OMNI_LOG(kInfo, "request_id={} decode cancelled before its turn: the client went away", id);
    return;
  }
  StatusOr<DecodeResult> result = Internal("decode did not run");
  std::string answer;
  try {
    result = service_.Decode(request, [&writer] { return !writer.client_gone(); });
    if (result.ok()) answer = DecodeResultJson(*result, request, service_.model_id());
  } catch (const std::exception& e) {
    result = Internal(fmt::format("decode failed: {}", e.what()));
  }
  if (!result.ok()) {
    const bool cancelled = result.status().code() == StatusCode::kCancelled;
    requests_->WithLabels({cancelled ? "cancelled" : "error"}).Inc();
    OMNI_LOG(kInfo, "request_id={} decode {}: {}", id, cancelled ? "cancelled" : "failed", result.status().ToString());
    if (!cancelled) writer.Send(ErrorResponse(result.status()));
    return;
  }
  requests_->WithLabels({"ok"}).Inc();
  OMNI_LOG(kInfo,
           "request_id={} decoded {} {}x{} steps={} seed={} condition={:.1f}ms denoise={:.1f}ms vae={:.1f}ms "
           "encode={:.1f}ms store={:.1f}ms",
           id, result->key, result->width, result->height, result->steps, result->seed, result->times.condition_ms,
           result->times.denoise_ms, result->times.vae_ms, result->times.encode_ms, result->times.store_ms);
  writer.Send(JsonResponse(200, answer));
}

void DecoderHttpAdapter::Close() { queue_.Close(); }

void DecoderHttpAdapter::WaitIdle() { queue_.WaitIdle(); }

}  // namespace omni::decoder
