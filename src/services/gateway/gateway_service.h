// The gateway's routing logic, without sockets: which pool serves a request
// (body-based model routing) and which of its endpoints should take it.
// The HTTP adapter (gateway_http.h) proxies; the poller and the KV-event
// subscriber feed endpoint state into the pools' routers.
//
// Thread-safety: thread-safe after Create.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "net/http.h"
#include "storage/object_store.h"
#include "services/gateway/gateway_config.h"
#include "services/gateway/media_info.h"
#include "services/gateway/pool_router.h"
#include "services/gateway/prompt_tokens.h"

namespace omni::gateway {

struct GatewayOptions {
  std::chrono::milliseconds metrics_interval{50};
  std::chrono::milliseconds health_interval{500};
  std::chrono::milliseconds scrape_timeout{1000};
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{600'000};
  int unhealthy_after = 2;  // consecutive failed health checks that eject an endpoint
  int max_attempts = 3;     // endpoints tried per request when connections fail
  uint64_t seed = 0;        // pickers' random tie-breaks; 0: from the clock
  // The config's `store`, opened by the caller (the CLI edge, with
  // storeTimeoutMs as its request timeout); null: media parts end the
  // precise scorer's prompts. Must outlive the service.
  ObjectStore* store = nullptr;
  // Where the service's own metrics go (gateway_media_lookups_total); may be null.
  MetricsRegistry* metrics = nullptr;
};

struct PoolState {
  PoolConfig config;
  std::unique_ptr<PoolRouter> router;
  std::unique_ptr<PromptTokenizer> tokenizer;  // only with a precise-prefix-cache-scorer
};

// A request bound to a pool, committed to decision.chosen.
struct RoutedRequest {
  PoolState* pool = nullptr;
  std::string model;
  RouteDecision decision;
  size_t next_rank = 1;  // the next of decision.ranked to retry on
  int attempts = 1;      // endpoints tried so far
};

// How one proxied attempt ended, as the HTTP adapter saw it.
struct AttemptEnd {
  StatusOr<int> status;    // the upstream's HTTP status, or why there is none
  bool client_gone = false;
  bool responded = false;     // bytes already went to the client: no retry possible
  bool event_stream = false;  // the response going out is text/event-stream
  bool shutting_down = false;  // the gateway's drain deadline ended the attempt
};

// What the adapter does next. The router's side (Finish, Retarget) is
// already applied when OnAttemptEnd returns.
struct AttemptVerdict {
  enum class Action {
    kDeliver,     // the upstream answered: relay its status (ok, or upstream_error for >= 500)
    kClientGone,  // nothing to send
    kRetry,       // attempt again, on routed.decision.chosen (already retargeted)
    kFail,        // nothing was sent yet: answer `error`
    // An event stream was under way: end it at an event boundary with
    // `error` as an OpenAI error event, then `data: [DONE]`, then the last
    // chunk, as the LLM server ends a stream it cannot finish.
    kEndStream,
    // Another streamed body was under way: close the connection without the
    // last chunk, so the client sees an incomplete message, never a
    // complete one.
    kCut,
  };
  Action action = Action::kDeliver;
  bool connect_failed = false;  // report the failed endpoint to the health poller
  bool shutdown = false;        // the gateway's drain, not the upstream, ended it
  Status error;                 // kFail, kEndStream: the client's error
};

class GatewayService {
 public:
  static StatusOr<std::unique_ptr<GatewayService>> Create(const GatewayConfig& config, GatewayOptions options,
                                                          const Clock& clock);

  // Reads `model` from the body (without parsing the rest), picks the pool
  // and an endpoint. InvalidArgument for a body without a string `model`;
  // NotFound, listing the served models, for a model no pool serves.
  // `look_up_media` false: media parts' objects are not looked up in the
  // store (the precise score ends before the first), so Route never blocks;
  // the HTTP adapter passes false on its io threads.
  StatusOr<RoutedRequest> Route(const HttpRequest& request, bool look_up_media = true);
  // Whether Route with media lookups is worth a worker thread for this
  // request: a store is configured, some pool has a precise scorer, and the
  // body names objects (s3:// or file:// URIs) whose metadata it may HEAD.
  // A heuristic on the raw body: a request it misses is only scored as if
  // its media were not there.
  bool RouteMayWait(const HttpRequest& request) const;

  // The retry, eject and finish policy for one ended attempt: a request
  // whose endpoint could not be reached, before any byte went to the
  // client, moves to the next ranked endpoint until max_attempts; every
  // other end finishes the request on its endpoint. A failure after bytes
  // went out ends an event stream with an error event (code
  // upstream_failed, or server_shutdown at the drain deadline) and cuts
  // any other body.
  AttemptVerdict OnAttemptEnd(RoutedRequest& routed, const AttemptEnd& end) const;

  // The OpenAI model list of every pool, in config order.
  std::string ModelsJson() const;
  // {"pools": [{"name", "role", "models", "router": PoolRouter::DebugJson()}]}
  std::string DebugJson() const;
  // Ok while every pool has a healthy endpoint.
  Status Health() const;

  const GatewayOptions& options() const { return options_; }
  const std::vector<std::unique_ptr<PoolState>>& pools() const { return pools_; }

 private:
  GatewayService(GatewayOptions options) : options_(std::move(options)) {}
  std::string ServedModelsList() const;

  const GatewayOptions options_;
  std::unique_ptr<StoreMediaInfo> media_info_;  // null without a store; shared by the pools' tokenizers
  std::vector<std::unique_ptr<PoolState>> pools_;
};

}  // namespace omni::gateway
