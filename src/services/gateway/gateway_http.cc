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
struct GatewayHttpAdapter::Call : UpstreamCall {
  explicit Call(std::shared_ptr<ResponseWriter> writer) : relay(std::move(writer)) {}

  HttpRequest request;
  ResponseRelay relay;
  RoutedRequest routed;
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
  stopping_.store(true);  // routes still queued are answered 503, not worked on
  // Each ends through Done, on the client's io thread, with Cancelled.
  const size_t stopped = live_.ShutdownAll();
  OMNI_LOG(kInfo, "gateway: drain deadline: stopping {} proxied requests", stopped);
}

void GatewayHttpAdapter::Proxy(HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
  constexpr int kMaxRouteWaiting = 256;
  if (service_.RouteMayWait(request)) {
    if (route_waiting_.fetch_add(1) < kMaxRouteWaiting) {
      auto shared = std::make_shared<HttpRequest>(std::move(request));
      const bool posted = route_workers_.Post([this, shared, writer]() mutable {
        route_waiting_.fetch_sub(1);
        if (stopping_.load()) {
          writer->Send(ErrorResponse(Unavailable("the gateway is shutting down").WithErrorCode("server_shutdown")));
          return;
        }
        RouteAndProxy(std::move(*shared), std::move(writer), /*look_up_media=*/true);
      });
      if (posted) return;
      route_waiting_.fetch_sub(1);
      writer->Send(ErrorResponse(Unavailable("the gateway is shutting down").WithErrorCode("server_shutdown")));
      return;
    }
    route_waiting_.fetch_sub(1);  // over the limit: routed here, without looking its media up
  }
  // On the io thread: never a store call.
  RouteAndProxy(std::move(request), std::move(writer), /*look_up_media=*/false);
}

void GatewayHttpAdapter::RouteAndProxy(HttpRequest request, std::shared_ptr<ResponseWriter> writer,
                                       bool look_up_media) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<RoutedRequest> routed = service_.Route(request, look_up_media);
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
  // Arrived after the drain-deadline hook ran: Attempt cancels it at once.
  live_.Add(call);
  std::weak_ptr<Call> weak = call;
  call->relay.writer().OnClientGone([weak] {
    if (auto c = weak.lock()) c->ClientGone();
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

  call->SetUpstream(client_.StreamAsync(std::move(upstream), call->relay.Callbacks(call),
                                        [this, call](StatusOr<int> status) { Done(call, std::move(status)); }));
}

void GatewayHttpAdapter::Done(const std::shared_ptr<Call>& call, StatusOr<int> status) {
  PoolState& pool = *call->routed.pool;
  const int endpoint = call->routed.decision.chosen;
  const std::string& address = pool.router->address(endpoint);
  AttemptEnd end{
      .status = std::move(status), .responded = call->relay.responded(), .event_stream = call->relay.event_stream()};
  const UpstreamCall::Flags flags = call->flags();
  end.client_gone = flags.client_gone;
  end.shutting_down = flags.shutting_down;
  AttemptVerdict v = service_.OnAttemptEnd(call->routed, end);
  if (v.connect_failed) poller_.ReportConnectFailure(pool, endpoint);
  Outcomes& outcomes = OutcomesOf(pool, endpoint);
  if (v.action != AttemptVerdict::Action::kRetry) live_.Remove(call.get());
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
