#include "services/gateway/gateway_service.h"

#include <algorithm>

#include "core/json_string.h"
#include "services/gateway/model_peek.h"

namespace omni::gateway {
namespace {

bool IsChat(std::string_view path) { return path == "/v1/chat/completions"; }

}  // namespace

StatusOr<std::unique_ptr<GatewayService>> GatewayService::Create(const GatewayConfig& config,
                                                                 GatewayOptions options, const Clock& clock) {
  if (options.seed == 0) options.seed = static_cast<uint64_t>(clock.WallNow().time_since_epoch().count());
  std::unique_ptr<GatewayService> service(new GatewayService(options));
  if (options.store != nullptr) {
    service->media_info_ =
        std::make_unique<StoreMediaInfo>(*options.store, StoreMediaInfoOptions{.metrics = options.metrics});
  }
  uint64_t seed = options.seed;
  for (const PoolConfig& pool : config.pools) {
    OMNI_ASSIGN_OR_RETURN(RoutingProfile profile, ResolveRoutingProfile(config, pool));
    auto state = std::make_unique<PoolState>();
    state->config = pool;
    if (profile.Uses(PluginType::kPrecisePrefixCacheScorer)) {
      if (pool.tokenizer.empty()) {
        return InvalidArgument("pool " + pool.name +
                               ": precise-prefix-cache-scorer needs `tokenizer` (the model folder)");
      }
      if (pool.kv_events.size() != pool.endpoints.size()) {
        return InvalidArgument("pool " + pool.name +
                               ": precise-prefix-cache-scorer needs one `kvEvents` address per endpoint, in order");
      }
      auto tokenizer = PromptTokenizer::FromModelDir(pool.tokenizer, service->media_info_.get());
      if (!tokenizer.ok()) return tokenizer.status().Annotate("pool " + pool.name + " tokenizer");
      state->tokenizer = std::move(tokenizer).value();
    }
    state->router = std::make_unique<PoolRouter>(
        pool.endpoints, std::move(profile), clock, seed++,
        state->tokenizer != nullptr ? std::span<const int32_t>(state->tokenizer->media_token_ids())
                                    : std::span<const int32_t>());
    service->pools_.push_back(std::move(state));
  }
  return service;
}

StatusOr<RoutedRequest> GatewayService::Route(const HttpRequest& request, bool look_up_media) {
  OMNI_ASSIGN_OR_RETURN(std::string model, PeekJsonModel(request.body));
  PoolState* pool = nullptr;
  for (const auto& p : pools_) {
    if (std::find(p->config.models.begin(), p->config.models.end(), model) != p->config.models.end()) pool = p.get();
  }
  if (pool == nullptr) {
    return ModelNotFound(model, ServedModelsList());
  }
  const PoolRouter& router = *pool->router;
  const bool chat = IsChat(request.path);
  RouteRequest route{.model = model};
  std::optional<std::string_view> raw_prompt;
  // The approximate scorer hashes the prompt; the KV-utilization scorer
  // counts its size towards the chosen endpoint's usage until the next scrape.
  if (router.profile().Uses(PluginType::kPrefixCacheScorer) ||
      router.profile().Uses(PluginType::kKvCacheUtilizationScorer)) {
    OMNI_ASSIGN_OR_RETURN(raw_prompt, PeekJsonRawMember(request.body, chat ? "messages" : "prompt"));
    route.prompt_text = raw_prompt.value_or(std::string_view());
  }
  std::optional<std::string_view> salt;
  OMNI_ASSIGN_OR_RETURN(salt, PeekJsonRawMember(request.body, "cache_salt"));
  route.cache_salt = salt.value_or(std::string_view());
  PromptTokens prompt;
  if (pool->tokenizer != nullptr && (chat || request.path == "/v1/completions")) {
    // A body the LLM server will reject is scored as promptless; the server
    // gives the client the precise error.
    auto tokens = chat ? pool->tokenizer->ChatPromptTokens(request.body, look_up_media)
                       : pool->tokenizer->CompletionPromptTokens(request.body);
    if (tokens.ok()) prompt = std::move(tokens).value();
    route.token_ids = prompt.token_ids;
    route.media = prompt.media;
  }
  if (router.profile().Uses(PluginType::kSessionAffinityScorer)) {
    route.session_id = request.headers.GetOr(router.profile().session_header, "");
  }
  RoutedRequest routed{.pool = pool, .model = std::move(model)};
  routed.decision = pool->router->Pick(route);
  return routed;
}

bool GatewayService::RouteMayWait(const HttpRequest& request) const {
  if (media_info_ == nullptr || !IsChat(request.path)) return false;
  const bool scored = std::any_of(pools_.begin(), pools_.end(), [](const auto& p) { return p->tokenizer != nullptr; });
  return scored && (request.body.find("s3://") != std::string::npos || request.body.find("file://") != std::string::npos);
}

std::string GatewayService::ServedModelsList() const {
  std::string out;
  for (const auto& p : pools_) {
    for (const std::string& m : p->config.models) {
      if (!out.empty()) out += ", ";
      out += m;
    }
  }
  return out;
}

std::string GatewayService::ModelsJson() const {
  std::string out = "{\"object\":\"list\",\"data\":[";
  bool first = true;
  for (const auto& p : pools_) {
    for (const std::string& m : p->config.models) {
      if (!first) out += ',';
      first = false;
      out += "{\"id\":";
      AppendJsonString(m, &out);
      out += ",\"object\":\"model\",\"created\":0,\"owned_by\":\"omniserve\",\"pool\":";
      AppendJsonString(p->config.name, &out);
      out += ",\"role\":";
      AppendJsonString(PoolRoleName(p->config.role), &out);
      out += '}';
    }
  }
  out += "]}";
  return out;
}

std::string GatewayService::DebugJson() const {
  std::string out = "{\"pools\":[";
  for (size_t i = 0; i < pools_.size(); ++i) {
    const PoolState& p = *pools_[i];
    if (i > 0) out += ',';
    out += "{\"name\":";
    AppendJsonString(p.config.name, &out);
    out += ",\"role\":";
    AppendJsonString(PoolRoleName(p.config.role), &out);
    out += ",\"router\":" + p.router->DebugJson() + '}';
  }
  out += "]}";
  return out;
}

Status GatewayService::Health() const {
  for (const auto& p : pools_) {
    std::vector<EndpointSnapshot> snap = p->router->Snapshot();
    if (std::none_of(snap.begin(), snap.end(), [](const EndpointSnapshot& e) { return e.healthy; })) {
      return Unavailable("pool " + p->config.name + " has no healthy endpoint");
    }
  }
  return Status::Ok();
}

AttemptVerdict GatewayService::OnAttemptEnd(RoutedRequest& routed, const AttemptEnd& end) const {
  PoolState& pool = *routed.pool;
  RouteDecision& decision = routed.decision;
  AttemptVerdict v;
  if (end.status.ok()) {
    pool.router->Finish(decision.chosen, decision.kv_tokens);
    v.action = AttemptVerdict::Action::kDeliver;
    return v;
  }
  if (end.client_gone) {
    pool.router->Finish(decision.chosen, decision.kv_tokens);
    v.action = AttemptVerdict::Action::kClientGone;
    return v;
  }
  const Status failure = end.status.status();
  const std::string& address = pool.router->address(decision.chosen);
  if (end.shutting_down) {
    pool.router->Finish(decision.chosen, decision.kv_tokens);
    v.shutdown = true;
    v.action = !end.responded ? AttemptVerdict::Action::kFail
               : end.event_stream ? AttemptVerdict::Action::kEndStream
                                  : AttemptVerdict::Action::kCut;
    v.error = Unavailable("the gateway is shutting down: the request to upstream " + address +
                          " was stopped at the drain deadline")
                  .WithErrorCode("server_shutdown");
    return v;
  }
  v.connect_failed = failure.code() == StatusCode::kUnavailable;
  if (v.connect_failed && !end.responded && routed.attempts < options_.max_attempts &&
      routed.next_rank < decision.ranked.size()) {
    pool.router->Retarget(decision, decision.ranked[routed.next_rank++]);
    ++routed.attempts;
    v.action = AttemptVerdict::Action::kRetry;
    return v;
  }
  pool.router->Finish(decision.chosen, decision.kv_tokens);
  if (end.responded) {
    // Whatever the cause (reset, close before the last chunk, read timeout,
    // bad framing), the client already has the status line: the error goes
    // in the stream, never as a silently short body.
    v.action = end.event_stream ? AttemptVerdict::Action::kEndStream : AttemptVerdict::Action::kCut;
    v.error = Unavailable("upstream " + address + " failed mid-stream: " + failure.message())
                  .WithErrorCode("upstream_failed");
    return v;
  }
  v.action = AttemptVerdict::Action::kFail;
  v.error = failure.code() == StatusCode::kDeadlineExceeded
                ? DeadlineExceeded("pool " + pool.config.name + " did not answer in time: " + std::string(failure.message()))
                : Unavailable("pool " + pool.config.name + " could not serve the request: " + std::string(failure.message()));
  return v;
}

}  // namespace omni::gateway
