// PoolRouter: endpoint picking for one pool. It holds the endpoints' state
// (scraped load, health, the gateway's own in-flight counts), the prefix
// indexes and the session map, and runs the profile's pipeline over a
// snapshot: filters -> scorers -> weighted sum -> picker.
//
// In-flight counts, picks-since-scrape, the approximate index and the
// session map are updated inside Pick, under the same lock as the scoring,
// so a burst of requests sees each other's choices at once (spec/routing.md:
// a dominant prefix score must not pile a burst onto one endpoint).
//
// No sockets: the gateway feeds scrapes, health and KV events in; the
// routing simulator feeds simulated ones. Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "engine/kv_event_decoder.h"
#include "services/gateway/approx_prefix_index.h"
#include "services/gateway/endpoint_state.h"
#include "services/gateway/pickers.h"
#include "services/gateway/precise_prefix_index.h"
#include "services/gateway/routing_profile.h"

namespace omni::gateway {

// What a request offers the scorers.
struct RouteRequest {
  std::string_view model;
  std::string_view cache_salt;
  std::string_view prompt_text;        // prefix-cache-scorer: serialized messages or prompt
  std::span<const int32_t> token_ids;  // precise-prefix-cache-scorer: the rendered prompt's ids
  std::span<const MediaKeySpan> media;  // precise-prefix-cache-scorer: the media positions' keys
  std::string_view session_id;         // session-affinity-scorer: the header's value
};

struct RouteDecision {
  std::vector<int> ranked;  // endpoint indices, best first; ranked[0] is committed
  int chosen = -1;
  double prefix_score = -1;  // the chosen endpoint's prefix score; -1 without a prefix scorer
  std::vector<uint64_t> approx_hashes;   // recorded on whichever endpoint serves it
  std::vector<uint64_t> precise_hashes;  // pending on it until its KV events arrive
  // The prompt's tokens (counted by the precise scorer's tokenizer, else
  // estimated from its characters); 0 when neither is known. They count
  // towards the endpoint's KV usage from the pick to Finish.
  double kv_tokens = 0;
};

// One scrape's reading.
struct EndpointLoad {
  double waiting = 0;
  double running = 0;
  double kv_usage = 0;
  int64_t num_blocks = 0;  // 0: unknown
  int64_t block_size = 0;  // tokens per KV block; 0: unknown (16 assumed)
  // vllm:prefix_cache_queries_total: prompt tokens the server has looked up,
  // a running count of the prompts it was sent; -1 when not reported.
  double prompt_tokens_total = -1;
};

class PoolRouter {
 public:
  // `media_token_ids`: the pool tokenizer's media token ids, which the
  // precise index hashes as one value (precise_prefix_index.h).
  PoolRouter(std::vector<std::string> addresses, RoutingProfile profile, const Clock& clock, uint64_t seed,
             std::span<const int32_t> media_token_ids = {});

  const RoutingProfile& profile() const { return profile_; }
  int size() const { return static_cast<int>(endpoints_.size()); }
  const std::string& address(int e) const { return endpoints_[e].address; }

  // Ranks the endpoints and commits the request to the best one.
  RouteDecision Pick(const RouteRequest& request);
  // Moves a committed request to another endpoint (a retry after the chosen
  // one failed to connect); `decision.chosen` becomes `to`.
  void Retarget(RouteDecision& decision, int to);
  // The request on `e` finished (or failed); `kv_tokens` is its decision's.
  void Finish(int e, double kv_tokens);

  void ReportLoad(int e, const EndpointLoad& load);
  // Ejects or readmits; true if that changed the endpoint's state.
  bool SetHealthy(int e, bool healthy);
  void ApplyKvEvents(int e, const KvEventBatch& batch);

  std::vector<EndpointSnapshot> Snapshot() const;
  // {"profile": ..., "endpoints": [{address, healthy, ..., "last_scores": {...}}]}
  std::string DebugJson() const;

  // The prefix-cache-scorer's blocks are characters, the servers' are
  // tokens. llm-d assumes 4 characters per token; the router measures the
  // pool's own ratio instead (prompt characters it routed over the prompt
  // tokens the servers report) once the servers have counted
  // kCalibrationTokens, and sizes each endpoint's approximate index to hold
  // what the endpoint's KV blocks hold. Without it a tokenizer with fewer
  // characters per token makes the index remember prefixes the server has
  // long evicted.
  static constexpr double kCalibrationTokens = 4096;
  double chars_per_token() const;
  size_t approx_capacity(int e) const;

 private:
  struct Scored {
    std::vector<int> candidates;
    std::vector<double> totals;
    std::vector<double> prefix;  // per candidate; empty without a prefix scorer
  };

  std::vector<EndpointSnapshot> SnapshotLocked() const;  // requires mu_
  Scored ScoreLocked(const RouteRequest& request, std::span<const EndpointSnapshot> snap,
                     std::span<const uint64_t> approx, std::span<const uint64_t> precise);  // requires mu_
  void CommitLocked(int e, const RouteDecision& decision);  // requires mu_
  double CharsPerTokenLocked() const;                       // requires mu_
  void SizeApproxIndexLocked(int e);                        // requires mu_

  const RoutingProfile profile_;
  const Clock& clock_;

  mutable std::mutex mu_;
  std::vector<EndpointSnapshot> endpoints_;           // guarded by mu_; metrics_age_ms unused here
  std::vector<Clock::MonoTime> last_scrape_;          // guarded by mu_
  std::vector<std::vector<double>> last_scores_;      // guarded by mu_; [endpoint][scorer]
  ApproxPrefixIndex approx_;                          // guarded by mu_
  PrecisePrefixIndex precise_;                        // guarded by mu_
  std::unordered_map<std::string, int> sessions_;     // guarded by mu_
  uint64_t round_robin_ = 0;                          // guarded by mu_
  PickRng rng_;                                       // guarded by mu_
  // Calibration of the approximate index (chars_per_token()).
  double routed_chars_ = 0;                           // guarded by mu_; prompt characters picked
  double counted_tokens_ = 0;                         // guarded by mu_; prompt tokens since each first scrape
  std::vector<double> last_tokens_;                   // guarded by mu_; per endpoint, -1 before any
};

}  // namespace omni::gateway
