#include "services/llm/llm_http.h"

#include <utility>

#include "core/log.h"
#include "services/llm/openai_json.h"
#include "api/openai/openai_parse.h"

namespace omni::llm {

using openai::ParseChatRequest;
using openai::ParseCompletionRequest;
using openai::ParseDetokenizeRequest;
using openai::ParseTokenizeRequest;

// One generation request from admission to its last byte. Shared by the
// prepare task, the service's callbacks and the client-gone hook; each step
// runs on one thread at a time (prepare pool, then the output thread).
struct LlmHttpAdapter::Exchange {
  Exchange(LlmHttpAdapter& a, std::shared_ptr<ResponseWriter> w, bool is_chat)
      : adapter(a), writer(std::move(w)), chat(is_chat) {}
  ~Exchange() { Done(); }
  // Gives the admission slot back; once, however the request ends.
  void Done() {
    if (!released.exchange(true)) adapter.Release();
  }

  LlmHttpAdapter& adapter;
  std::shared_ptr<ResponseWriter> writer;
  const bool chat;
  PreparedGeneration prepared;
  std::vector<bool> started;  // streams: the first chunk of each choice was sent
  bool aborted = false;       // streams: a choice ended in "abort"
  bool failed = false;        // streams: a choice ended in "error" (the model failed)
  std::atomic<bool> released{false};
};

namespace {

HttpResponse Busy(int pending) {
  HttpResponse r = ErrorResponse(
      ResourceExhausted("the server holds " + std::to_string(pending) + " requests, its limit; retry shortly")
          .WithErrorCode("server_busy"));
  r.headers.Set("retry-after", "1");
  return r;
}

}  // namespace

LlmHttpAdapter::LlmHttpAdapter(LlmService& service, MetricsRegistry& metrics, LlmHttpOptions options)
    : service_(service),
      metrics_(metrics),
      options_(options),
      rejected_total_(&metrics.AddCounter("omni_llm_requests_rejected_total",
                                          "Generation requests refused with 429 at the admission limit.")
                           .Get()),
      pending_gauge_(&metrics.AddGauge("omni_llm_pending_requests",
                                       "Generation requests held (preparing, waiting or running).")
                          .Get()),
      prepare_pool_(static_cast<size_t>(std::max(1, options.prepare_threads))) {}

LlmHttpAdapter::~LlmHttpAdapter() {
  prepare_pool_.Shutdown();
  WaitIdle();
}

void LlmHttpAdapter::RegisterRoutes(HttpServer& server) {
  server.SetHealthCheck([this] { return service_.Ready(); });
  // Past the drain deadline, end the generations still running: their
  // streams get an error event and [DONE], unary requests a 503.
  server.SetDrainDeadlineHook([this] { service_.Shutdown(); });
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

void LlmHttpAdapter::Release() {
  pending_gauge_->Dec();
  if (pending_.fetch_sub(1) == 1) {
    std::lock_guard lock(mu_);
    idle_.notify_all();
  }
}

bool LlmHttpAdapter::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (idle_.wait_for(lock, timeout, [&] { return pending_.load() == 0; })) return true;
  OMNI_LOG(kError, "llm: {} requests still held after {} ms at shutdown", pending_.load(), timeout.count());
  return false;
}

void LlmHttpAdapter::StartGeneration(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool chat) {
  // Admission on the io thread, before any work: a burst beyond the bound
  // costs one small reply each.
  const int held = pending_.fetch_add(1);
  if (held >= options_.max_pending_requests) {
    pending_.fetch_sub(1);
    rejected_total_->Inc();
    writer->Send(Busy(held));
    return;
  }
  pending_gauge_->Inc();
  auto ex = std::make_shared<Exchange>(*this, std::move(writer), chat);
  bool posted = prepare_pool_.Post([this, ex, request = std::move(request)]() mutable {
    try {
      Prepare(ex, request);
    } catch (const std::exception& e) {  // bad_alloc above all: fail this request, not the process
      log::RequestLog(request.request_id).Error("preparing the request failed: {}", e.what());
      ex->writer->Send(ErrorResponse(Unavailable("the server could not prepare this request; retry later")));
    }
    request = HttpRequest();  // the body's memory goes back now, not with the pool's task
  });
  if (!posted) ex->writer->Send(ErrorResponse(Unavailable("server is shutting down")));
}

void LlmHttpAdapter::Prepare(const std::shared_ptr<Exchange>& ex, const HttpRequest& request) {
  StatusOr<PreparedGeneration> prepared = [&]() -> StatusOr<PreparedGeneration> {
    if (ex->chat) {
      OMNI_ASSIGN_OR_RETURN(ChatRequest req, ParseChatRequest(request.body));
      return service_.PrepareChat(req);
    }
    OMNI_ASSIGN_OR_RETURN(CompletionRequest req, ParseCompletionRequest(request.body));
    return service_.PrepareCompletion(req);
  }();
  if (!prepared.ok()) {
    ex->writer->Send(ErrorResponse(prepared.status()));
    return;
  }
  ex->prepared = std::move(prepared).value();
  // A client that leaves cancels at once, even while no token is flowing.
  PreparedGeneration handle;
  handle.id = ex->prepared.id;
  handle.sampling.n = ex->prepared.sampling.n;
  LlmService* service = &service_;
  ex->writer->OnClientGone([service, handle = std::move(handle)] { service->Cancel(handle); });
  if (ex->prepared.stream) {
    Stream(ex);
  } else {
    Unary(ex);
  }
}

void LlmHttpAdapter::Stream(const std::shared_ptr<Exchange>& ex) {
  HttpHeaders headers;
  headers.Set("content-type", "text/event-stream");
  headers.Set("cache-control", "no-cache");
  if (!ex->writer->StartStream(200, std::move(headers))) return;
  ex->started.assign(ex->prepared.sampling.n, false);
  auto sink = [ex](const GenerationEvent& e) {
    const bool first = !ex->started[e.choice];
    ex->started[e.choice] = true;
    // "abort" with the client still there: the server ended it (shutdown).
    if (e.kind == GenerationEvent::Kind::kFinish && e.finish_reason == "abort") ex->aborted = true;
    // The model failed: the stream ends with an error event, not a chunk
    // with a finish reason OpenAI does not have.
    if (e.kind == GenerationEvent::Kind::kFinish && e.finish_reason == "error") {
      ex->failed = true;
      return !ex->writer->client_gone();
    }
    const PreparedGeneration& p = ex->prepared;
    return ex->writer->WriteSseEventNoWait(p.chat ? ChatChunkJson(p, e, first) : CompletionChunkJson(p, e, first));
  };
  auto done = [ex](StatusOr<Usage> usage) {
    ResponseWriter& w = *ex->writer;
    if (!usage.ok()) {
      w.WriteSseEventNoWait(usage.status().ToOpenAiJson());
    } else if (ex->failed) {
      w.WriteSseEventNoWait(Internal("the model failed while generating; the output above is incomplete")
                                .WithErrorCode("model_error")
                                .ToOpenAiJson());
    } else if (ex->aborted) {
      w.WriteSseEventNoWait(Unavailable("generation stopped: the server is shutting down").ToOpenAiJson());
    } else if (ex->prepared.include_usage) {
      w.WriteSseEventNoWait(UsageChunkJson(ex->prepared, *usage));
    }
    w.WriteSseEventNoWait("[DONE]");
    w.Finish();
    ex->Done();
  };
  service_.StartGenerate(TakeEngineRequest(*ex), std::move(sink), std::move(done));
}

// The request for the service, which keeps it for the engine; the replies
// need only its id and options, so the exchange lets go of the prompt and
// a long one is not held twice. Before the service is called: once it is,
// the output thread reads `ex.prepared`.
PreparedGeneration LlmHttpAdapter::TakeEngineRequest(Exchange& ex) {
  PreparedGeneration request = ex.prepared;
  ex.prepared.prompt_ids = {};
  ex.prepared.media = {};
  return request;
}

void LlmHttpAdapter::Unary(const std::shared_ptr<Exchange>& ex) {
  service_.StartComplete(TakeEngineRequest(*ex), [ex] { return !ex->writer->client_gone(); },
                         [ex](StatusOr<CompletionResult> result) {
                           const PreparedGeneration& p = ex->prepared;
                           if (!result.ok()) {
                             ex->writer->Send(ErrorResponse(result.status()));
                           } else {
                             ex->writer->Send(JsonResponse(200, p.chat ? ChatCompletionJson(p, result->choices, result->usage)
                                                                       : CompletionJson(p, result->choices, result->usage)));
                           }
                           ex->Done();
                         });
}

}  // namespace omni::llm
