// The HTTP face of the gateway: routes each API request to a pool and an
// endpoint (GatewayService), proxies it there and streams the answer back.
//
// Proxying: the request body is buffered (body-based routing needs `model`,
// and a retry needs the body again); the response streams through as it
// arrives (SSE event by event) unless it is a plain JSON answer with a
// Content-Length, which is sent whole. If the chosen endpoint cannot be
// reached or fails before any response byte reached the client, the request
// is retried on the next-ranked endpoint (up to max_attempts), and the
// failed endpoint is ejected until its health check passes. A failure after
// that ends an SSE stream with an OpenAI error event and `data: [DONE]` at
// an event boundary (ResponseRelay holds back partial events for this), and
// cuts any other body without its last chunk (GatewayService::OnAttemptEnd
// decides). At the server's drain deadline the calls still running are
// ended the same way, with code server_shutdown. A client that
// disconnects cancels the upstream request, which closes its connection, so
// the LLM server aborts the generation.
//
// Routes: POST /v1/chat/completions, /v1/completions, /v1/encode,
// /v1/decode, /tokenize, /detokenize (pool by `model`); GET /v1/models
// (all pools); GET /health; GET /metrics; GET /debug/endpoints.
//
// A chat request whose routing may wait on the store (media parts whose
// objects' metadata the precise scorer HEADs; GatewayService::RouteMayWait)
// is routed on a small worker pool instead of the io thread, up to 256
// waiting; beyond that, and for every other request, routing on the io
// thread never calls the store (media parts end the precise score there).
//
// Thread-safety: thread-safe; handlers run on the server's io threads and
// the client's io thread, and never block.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/upstream_calls.h"
#include "services/gateway/endpoint_poller.h"
#include "services/gateway/gateway_service.h"

namespace omni::gateway {

class GatewayHttpAdapter {
 public:
  // All must outlive the adapter.
  GatewayHttpAdapter(GatewayService& service, HttpClient& client, EndpointPoller& poller, MetricsRegistry& metrics);

  void RegisterRoutes(HttpServer& server);

 private:
  struct Call;
  // One endpoint's gateway_requests_total children, looked up once.
  struct Outcomes {
    Counter* ok;
    Counter* upstream_error;
    Counter* retried;
    Counter* error;
    Counter* client_gone;
    Counter* midstream_upstream;  // gateway_midstream_failures_total, cause="upstream"
    Counter* midstream_shutdown;  // cause="shutdown"
  };

  Outcomes& OutcomesOf(const PoolState& pool, int endpoint) { return outcomes_.at(&pool)[endpoint]; }
  void Proxy(HttpRequest request, std::shared_ptr<ResponseWriter> writer);
  // Route, then the first attempt; on an io thread (look_up_media false) or
  // a route worker.
  void RouteAndProxy(HttpRequest request, std::shared_ptr<ResponseWriter> writer, bool look_up_media);
  void Attempt(const std::shared_ptr<Call>& call);
  void Done(const std::shared_ptr<Call>& call, StatusOr<int> status);
  // The drain-deadline hook: cancels every running upstream call, so that
  // each ends through Done with AttemptEnd::shutting_down.
  void StopForShutdown();

  GatewayService& service_;
  HttpClient& client_;
  EndpointPoller& poller_;
  Counter* rejected_;
  std::unordered_map<const PoolState*, std::vector<Outcomes>> outcomes_;  // read-only after construction
  std::unordered_map<const PoolState*, Counter*> retries_;                // read-only after construction
  std::unordered_map<const PoolState*, Histogram*> prefix_score_;         // read-only after construction
  Histogram& pick_seconds_;

  UpstreamCalls live_;  // proxied requests not yet ended, for the drain-deadline hook
  std::atomic<int> route_waiting_{0};  // requests posted to route_workers_ and not yet routed
  std::atomic<bool> stopping_{false};  // the drain deadline passed
  ThreadPool route_workers_{2};        // routes that may wait on the store; declared last: joined first
};

}  // namespace omni::gateway
