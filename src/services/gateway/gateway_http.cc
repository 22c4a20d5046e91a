#include "services/gateway/gateway_http.h"

#include <chrono>
#include <mutex>

#include "core/log.h"
#include "net/response_relay.h"

namespace omni::gateway {
namespace {

std::vector<double> ScoreBuckets() { return {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0}; }
std::vector<double> PickBuckets() { return {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 1e-2}; }

}  // namespace

// One proxied request across its attempts. Fields without a guard are
// touched by one attempt's callbacks at a time (the client's io thread).
struct GatewayHttpAdapter::Call {
  explicit Call(std::shared_ptr<ResponseWriter> writer) : relay(std::move(writer)) {}

  HttpRequest request;
  ResponseRelay relay;
  RoutedRequest routed;

  std::mutex mu;
  std::shared_ptr<HttpCallHandle> upstream;  // guarded by mu
  bool client_gone = false;                  // guarded by mu
  bool shutting_down = false;                // guarded by mu
};

GatewayHttpAdapter::GatewayHttpAdapter(GatewayService& service, HttpClient& client, EndpointPoller& poller,
                                       MetricsRegistry& metrics)
    : service_(service),
      client_(client),
      poller_(poller),
      pick_seconds_(metrics.AddHistogram("gateway_pick_duration_seconds", "Routing and endpoint picking time.", {},
                                         PickBuckets())
                        .Get()) {
  auto& requests = metrics.AddCounter("gateway_requests_total", "Proxied requests by pool, endpoint and outcome.",
                                      {"pool", "endpoint", "outcome"});
  auto& retries = metrics.AddCounter("gateway_retries_total", "Requests moved to another endpoint.", {"pool"});
  auto& prefix = metrics.AddHistogram("gateway_prefix_score", "Prefix score of the chosen endpoint.", {"pool"},
                                      ScoreBuckets());
  auto& midstream = metrics.AddCounter(
      "gateway_midstream_failures_total",
      "Proxied responses that ended early after bytes went to the client, by cause (upstream, shutdown).",
      {"pool", "endpoint", "cause"});
  rejected_ = &requests.WithLabels({"", "", "rejected"});
  for (const auto& pool : service.pools()) {
    const std::string& name = pool->config.name;
    retries_[pool.get()] = &retries.WithLabels({name});
    prefix_score_[pool.get()] = &prefix.WithLabels({name});
    auto& outcomes = outcomes_[pool.get()];
    for (int e = 0; e < pool->router->size(); ++e) {
      const std::string& address = pool->router->address(e);
      outcomes.push_back({&requests.WithLabels({name, address, "ok"}),
                          &requests.WithLabels({name, address, "upstream_error"}),
                          &requests.WithLabels({name, address, "retried"}),
                          &requests.WithLabels({name, address, "error"}),
                          &requests.WithLabels({name, address, "client_gone"}),
                          &midstream.WithLabels({name, address, "upstream"}),
                          &midstream.WithLabels({name, address, "shutdown"})});
    }
  }
}

void GatewayHttpAdapter::RegisterRoutes(HttpServer& server) {
  for (const char* path :
       {"/v1/chat/completions", "/v1/completions", "/v1/encode", "/v1/decode", "/tokenize", "/detokenize"}) {
    server.RouteStreaming(HttpMethod::kPost, path, [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
      Proxy(std::move(r), std::move(w));
    });
  }
  server.RouteInline(HttpMethod::kGet, "/v1/models",
                     [this](const HttpRequest&) { return JsonResponse(200, service_.ModelsJson()); });
  server.RouteInline(HttpMethod::kGet, "/debug/endpoints",
                     [this](const HttpRequest&) { return JsonResponse(200, service_.DebugJson()); });
  server.SetHealthCheck([this] { return service_.Health(); });
  server.SetDrainDeadlineHook([this] { StopForShutdown(); });
}

void GatewayHttpAdapter::StopForShutdown() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    std::lock_guard lock(live_mu_);
    shutting_down_ = true;
    for (const auto& [raw, weak] : live_) {
      if (auto c = weak.lock()) calls.push_back(std::move(c));
    }
  }
  OMNI_LOG(kInfo, "gateway: drain deadline: stopping {} proxied requests", calls.size());
  for (const auto& c : calls) {
    std::lock_guard lock(c->mu);
    c->shutting_down = true;
    // Done then runs on the client's io thread with Cancelled.
    if (c->upstream != nullptr) c->upstream->Cancel();
  }
}

void GatewayHttpAdapter::Forget(const Call& call) {
  std::lock_guard lock(live_mu_);
  live_.erase(&call);
}

void GatewayHttpAdapter::Proxy(HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<RoutedRequest> routed = service_.Route(request);
  pick_seconds_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!routed.ok()) {
    rejected_->Inc();
    writer->Send(ErrorResponse(routed.status()));
    return;
  }
  if (routed->decision.prefix_score >= 0) {
    prefix_score_.at(routed->pool)->Observe(routed->decision.prefix_score);
  }
  auto call = std::make_shared<Call>(std::move(writer));
  call->request = std::move(request);
  call->routed = std::move(routed).value();
  std::weak_ptr<Call> weak = call;
  {
    std::lock_guard lock(live_mu_);
    live_.emplace(call.get(), weak);
    // Arrived after the drain-deadline hook ran: Attempt cancels it at once.
    if (shutting_down_) call->shutting_down = true;
  }
  call->relay.writer().OnClientGone([weak] {
    auto c = weak.lock();
    if (c == nullptr) return;
    std::lock_guard lock(c->mu);
    c->client_gone = true;
    if (c->upstream != nullptr) c->upstream->Cancel();
  });
  Attempt(call);
}

void GatewayHttpAdapter::Attempt(const std::shared_ptr<Call>& call) {
  const PoolRouter& router = *call->routed.pool->router;
  HttpClientRequest upstream{.method = call->request.method,
                             .url = "http://" + router.address(call->routed.decision.chosen) + call->request.target,
                             .headers = EndToEndHeaders(call->request.headers),
                             .body = call->request.body,
                             .timeout = service_.options().request_timeout};
  upstream.headers.Set("x-request-id", call->request.request_id);
  upstream.headers.Set("x-forwarded-for", ForwardedFor(call->request));

  auto handle = client_.StreamAsync(std::move(upstream), call->relay.Callbacks(call),
                                    [this, call](StatusOr<int> status) { Done(call, std::move(status)); });
  std::lock_guard lock(call->mu);
  call->upstream = std::move(handle);
  if (call->client_gone || call->shutting_down) call->upstream->Cancel();
}

void GatewayHttpAdapter::Done(const std::shared_ptr<Call>& call, StatusOr<int> status) {
  PoolState& pool = *call->routed.pool;
  const int endpoint = call->routed.decision.chosen;
  const std::string& address = pool.router->address(endpoint);
  AttemptEnd end{
      .status = std::move(status), .responded = call->relay.responded(), .event_stream = call->relay.event_stream()};
  {
    std::lock_guard lock(call->mu);
    end.client_gone = call->client_gone;
    end.shutting_down = call->shutting_down;
  }
  AttemptVerdict v = service_.OnAttemptEnd(call->routed, end);
  if (v.connect_failed) poller_.ReportConnectFailure(pool, endpoint);
  Outcomes& outcomes = OutcomesOf(pool, endpoint);
  if (v.action != AttemptVerdict::Action::kRetry) Forget(*call);
  switch (v.action) {
    case AttemptVerdict::Action::kDeliver:
      call->relay.Deliver();
      (call->relay.status() < 500 ? outcomes.ok : outcomes.upstream_error)->Inc();
      return;
    case AttemptVerdict::Action::kClientGone:
      outcomes.client_gone->Inc();
      return;
    case AttemptVerdict::Action::kRetry:
      OMNI_LOG(kWarn, "gateway: request {} to {} failed ({}); retrying", call->request.request_id, address,
               end.status.status().message());
      outcomes.retried->Inc();
      retries_.at(&pool)->Inc();
      call->relay.Reset();
      Attempt(call);
      return;
    case AttemptVerdict::Action::kFail:
      outcomes.error->Inc();
      OMNI_LOG(kWarn, "gateway: request {} to {} failed: {}", call->request.request_id, address,
               v.shutdown ? v.error.message() : end.status.status().message());
      call->relay.Fail(v.error);
      return;
    case AttemptVerdict::Action::kEndStream:
    case AttemptVerdict::Action::kCut:
      outcomes.error->Inc();
      (v.shutdown ? outcomes.midstream_shutdown : outcomes.midstream_upstream)->Inc();
      OMNI_LOG(kWarn, "gateway: request {}: {}", call->request.request_id, v.error.message());
      if (v.action == AttemptVerdict::Action::kEndStream) {
        call->relay.EndEventStream(v.error);
      } else {
        call->relay.Cut();
      }
      return;
  }
}

}  // namespace omni::gateway
