#include "services/encoder/encoder_http.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/log.h"

namespace omni::encoder {

EncoderHttpAdapter::EncoderHttpAdapter(EncoderService& service, MetricsRegistry& metrics, EncoderHttpOptions options)
    : service_(service),
      options_(options),
      requests_(&metrics.AddCounter("omni_encoder_requests_total", "Encode requests by outcome.", {"result"})),
      rejected_(&metrics.AddCounter("omni_encoder_requests_rejected_total",
                                    "Encode requests refused with 429: the queue was full.")
                     .Get()),
      queue_(&metrics.AddGauge("omni_encoder_requests_held", "Encode requests queued or running.").Get()),
      pool_(static_cast<size_t>(std::max(1, options.workers))) {}

EncoderHttpAdapter::~EncoderHttpAdapter() = default;

void EncoderHttpAdapter::RegisterRoutes(HttpServer& server) {
  server.RouteStreaming(HttpMethod::kPost, "/v1/encode", [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    Accept(std::move(r), std::move(w), /*omniserve_form=*/false);
  });
  // OmniServe's routes: the vision encoder's and the audio encoder's (each
  // server answers both; a medium of the other modality is a 415).
  for (const char* path : {"/process_image_or_video", "/process_audio"}) {
    server.RouteStreaming(HttpMethod::kPost, path, [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
      Accept(std::move(r), std::move(w), /*omniserve_form=*/true);
    });
  }
  server.Route(HttpMethod::kGet, "/v1/models", [this](const HttpRequest&) {
    nlohmann::ordered_json model = {{"id", service_.model_id()}, {"object", "model"}, {"owned_by", "omniserve"}};
    return JsonResponse(200, nlohmann::ordered_json{{"object", "list"}, {"data", {model}}}.dump());
  });
}

void EncoderHttpAdapter::Accept(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool omniserve_form) {
  const int limit = std::max(1, options_.workers) + options_.max_queue;
  if (held_.fetch_add(1) >= limit) {
    held_.fetch_sub(1);
    rejected_->Inc();
    requests_->WithLabels({"rejected"}).Inc();
    HttpResponse busy = ErrorResponse(
        ResourceExhausted(fmt::format("the encoder holds {} requests, its limit; retry shortly", limit))
            .WithErrorCode("server_busy"));
    busy.headers.Set("retry-after", "1");
    writer->Send(std::move(busy));
    return;
  }
  queue_->Inc();
  OMNI_LOG(kInfo, "request_id={} encode request queued ({} held)", request.request_id, held_.load());
  auto shared = std::make_shared<HttpRequest>(std::move(request));
  const bool posted = pool_.Post([this, shared, writer, omniserve_form] {
    Run(*shared, *writer, omniserve_form);
    Release();
  });
  if (!posted) {
    writer->Send(ErrorResponse(Unavailable("the encoder is shutting down")));
    Release();
  }
}

void EncoderHttpAdapter::Run(const HttpRequest& request, ResponseWriter& writer, bool omniserve_form) {
  StatusOr<EncodeRequest> parsed =
      omniserve_form ? ParseOmniServeEncodeRequest(request.body) : ParseEncodeRequest(request.body);
  StatusOr<EncodeResult> result = parsed.ok() ? service_.Encode(*parsed) : StatusOr<EncodeResult>(parsed.status());
  if (!result.ok()) {
    requests_->WithLabels({"error"}).Inc();
    OMNI_LOG(kInfo, "request_id={} encode failed: {}", request.request_id, result.status().ToString());
    writer.Send(ErrorResponse(result.status()));
    return;
  }
  requests_->WithLabels({result->cached ? "cached" : "encoded"}).Inc();
  OMNI_LOG(kInfo, "request_id={} {} {} rows={} ids={} fetch={:.1f}ms decode={:.1f}ms encode={:.1f}ms store={:.1f}ms",
           request.request_id, result->cached ? "cached" : "encoded", result->key, result->rows, result->ids,
           result->times.fetch_ms, result->times.decode_ms, result->times.encode_ms, result->times.store_ms);
  writer.Send(JsonResponse(200, EncodeResultJson(*result, service_.model_id())));
}

void EncoderHttpAdapter::Release() {
  queue_->Dec();
  if (held_.fetch_sub(1) == 1) {
    std::lock_guard lock(mu_);
    idle_.notify_all();
  }
}

bool EncoderHttpAdapter::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return held_.load() == 0; });
}

}  // namespace omni::encoder
