#include "services/llm/llm_http.h"

#include <thread>
#include <utility>

#include "services/llm/openai_json.h"
#include "services/llm/openai_parse.h"

namespace omni::llm {

void LlmHttpAdapter::RegisterRoutes(HttpServer& server) {
  server.SetHealthCheck([this] { return service_.Ready(); });
  server.RouteStreaming(HttpMethod::kPost, "/v1/chat/completions",
                        [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
                          StartGeneration(std::move(r), std::move(w), /*chat=*/true);
                        });
  server.RouteStreaming(HttpMethod::kPost, "/v1/completions", [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    StartGeneration(std::move(r), std::move(w), /*chat=*/false);
  });
  server.RouteInline(HttpMethod::kGet, "/v1/models", [this](const HttpRequest&) {
    if (Status s = service_.Ready(); !s.ok()) return ErrorResponse(s);
    return JsonResponse(200, ModelsJson(service_.served_model_name(), service_.max_model_len()));
  });
  server.Route(HttpMethod::kPost, "/tokenize", [this](const HttpRequest& r) {
    StatusOr<TokenizeRequest> req = ParseTokenizeRequest(r.body);
    if (!req.ok()) return ErrorResponse(req.status());
    StatusOr<TokenizeResult> result = service_.Tokenize(*req);
    if (!result.ok()) return ErrorResponse(result.status());
    return JsonResponse(200, TokenizeJson(*result));
  });
  server.Route(HttpMethod::kPost, "/detokenize", [this](const HttpRequest& r) {
    StatusOr<DetokenizeRequest> req = ParseDetokenizeRequest(r.body);
    if (!req.ok()) return ErrorResponse(req.status());
    StatusOr<std::string> text = service_.Detokenize(*req);
    if (!text.ok()) return ErrorResponse(text.status());
    return JsonResponse(200, DetokenizeJson(*text));
  });
  server.RouteInline(HttpMethod::kGet, "/metrics", [this](const HttpRequest&) {
    service_.UpdateEngineMetrics();
    HttpResponse r;
    r.headers.Set("content-type", kPrometheusContentType);
    r.body = metrics_.Render();
    return r;
  });
}

void LlmHttpAdapter::StartGeneration(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool chat) {
  {
    std::lock_guard lock(mu_);
    ++in_flight_;
  }
  std::thread([this, request = std::move(request), writer = std::move(writer), chat]() mutable {
    RunGeneration(request, writer, chat);
    // Drop the writer before WaitIdle can return, so nothing of the request
    // outlives the adapter.
    writer.reset();
    request = HttpRequest();
    std::lock_guard lock(mu_);
    if (--in_flight_ == 0) idle_.notify_all();
  }).detach();
}

void LlmHttpAdapter::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return in_flight_ == 0; });
}

void LlmHttpAdapter::RunGeneration(const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer,
                                   bool chat) {
  StatusOr<PreparedGeneration> prepared = [&]() -> StatusOr<PreparedGeneration> {
    if (chat) {
      OMNI_ASSIGN_OR_RETURN(ChatRequest req, ParseChatRequest(request.body));
      return service_.PrepareChat(req);
    }
    OMNI_ASSIGN_OR_RETURN(CompletionRequest req, ParseCompletionRequest(request.body));
    return service_.PrepareCompletion(req);
  }();
  if (!prepared.ok()) {
    writer->Send(ErrorResponse(prepared.status()));
    return;
  }
  // A client that leaves cancels at once, even while no token is flowing.
  PreparedGeneration handle;
  handle.id = prepared->id;
  handle.sampling.n = prepared->sampling.n;
  LlmService* service = &service_;
  writer->OnClientGone([service, handle = std::move(handle)] { service->Cancel(handle); });
  if (prepared->stream) {
    Stream(*prepared, writer);
  } else {
    Unary(*prepared, writer);
  }
}

void LlmHttpAdapter::Stream(const PreparedGeneration& prepared, const std::shared_ptr<ResponseWriter>& writer) {
  HttpHeaders headers;
  headers.Set("content-type", "text/event-stream");
  headers.Set("cache-control", "no-cache");
  if (!writer->StartStream(200, std::move(headers))) {
    service_.Cancel(prepared);
    return;
  }
  std::vector<bool> started(prepared.sampling.n, false);
  StatusOr<Usage> usage = service_.Generate(prepared, [&](const GenerationEvent& e) {
    const bool first = !started[e.choice];
    started[e.choice] = true;
    std::string chunk = prepared.chat ? ChatChunkJson(prepared, e, first) : CompletionChunkJson(prepared, e, first);
    return writer->WriteSseEvent(chunk);
  });
  if (!usage.ok()) {
    writer->WriteSseEvent(usage.status().ToOpenAiJson());
  } else if (prepared.include_usage) {
    writer->WriteSseEvent(UsageChunkJson(prepared, *usage));
  }
  writer->WriteSseEvent("[DONE]");
  writer->Finish();
}

void LlmHttpAdapter::Unary(const PreparedGeneration& prepared, const std::shared_ptr<ResponseWriter>& writer) {
  StatusOr<CompletionResult> result = service_.Complete(prepared, [&] { return !writer->client_gone(); });
  if (!result.ok()) {
    writer->Send(ErrorResponse(result.status()));
    return;
  }
  writer->Send(JsonResponse(200, prepared.chat ? ChatCompletionJson(prepared, result->choices, result->usage)
                                               : CompletionJson(prepared, result->choices, result->usage)));
}

}  // namespace omni::llm
