#include "services/gateway/pool_router.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/check.h"
#include "core/json_string.h"

namespace omni::gateway {
namespace {

// Sessions remembered by session-affinity-scorer; past this the map starts
// over (sessions then stick again from their next pick).
constexpr size_t kMaxSessions = 1 << 20;

}  // namespace

PoolRouter::PoolRouter(std::vector<std::string> addresses, RoutingProfile profile, const Clock& clock,
                       uint64_t seed, std::span<const int32_t> media_token_ids)
    : profile_(std::move(profile)),
      clock_(clock),
      last_scrape_(addresses.size()),
      last_scores_(addresses.size(), std::vector<double>(profile_.scorers.size(), 0.0)),
      approx_(static_cast<int>(addresses.size()), profile_.lru_capacity_per_server),
      precise_(static_cast<int>(addresses.size()), profile_.precise_block_size, media_token_ids),
      rng_(seed),
      last_tokens_(addresses.size(), -1) {
  OMNI_CHECK(!addresses.empty()) << "a pool needs endpoints";
  OMNI_CHECK(addresses.size() < 65536) << "too many endpoints";
  for (std::string& a : addresses) endpoints_.push_back(EndpointSnapshot{.address = std::move(a)});
}

RouteDecision PoolRouter::Pick(const RouteRequest& request) {
  RouteDecision decision;
  if (profile_.Uses(PluginType::kPrefixCacheScorer)) {
    decision.approx_hashes = ApproxPromptHashes(request.model, request.cache_salt, request.prompt_text,
                                                profile_.approx_block_chars, profile_.max_prefix_blocks);
  }
  const double prompt_chars = static_cast<double>(request.prompt_text.size());
  if (profile_.Uses(PluginType::kPrecisePrefixCacheScorer) && request.cache_salt.empty()) {
    // Outside the lock: RequestHashes reads only what the constructor set.
    decision.precise_hashes = precise_.RequestHashes(request.token_ids, request.media, profile_.max_prefix_blocks);
  }

  std::lock_guard lock(mu_);
  if (!request.token_ids.empty()) {
    decision.kv_tokens = static_cast<double>(request.token_ids.size());
  } else if (prompt_chars > 0) {
    decision.kv_tokens = prompt_chars / CharsPerTokenLocked();
  }
  const std::vector<EndpointSnapshot> snap = SnapshotLocked();
  Scored scored = ScoreLocked(request, snap, decision.approx_hashes, decision.precise_hashes);
  switch (profile_.picker) {
    case PluginType::kRandomPicker:
      decision.ranked = RankRandom(scored.candidates, rng_);
      break;
    case PluginType::kWeightedRandomPicker:
      decision.ranked = RankWeightedRandom(scored.candidates, scored.totals, rng_);
      break;
    case PluginType::kRoundRobinPicker:
      decision.ranked = RankRoundRobin(scored.candidates, round_robin_++);
      break;
    default:
      decision.ranked = RankMaxScore(scored.candidates, scored.totals, rng_);
      break;
  }
  // Candidates the filters dropped still serve as last-resort retries.
  std::vector<bool> ranked(size(), false);
  for (int e : decision.ranked) ranked[e] = true;
  for (int e = 0; e < size(); ++e) {
    if (!ranked[e]) decision.ranked.push_back(e);
  }
  decision.chosen = decision.ranked.front();
  routed_chars_ += prompt_chars;  // once per request, whichever endpoint serves it
  if (!scored.prefix.empty()) {
    auto pos = std::find(scored.candidates.begin(), scored.candidates.end(), decision.chosen);
    decision.prefix_score = scored.prefix[pos - scored.candidates.begin()];
  }
  CommitLocked(decision.chosen, decision);
  if (profile_.Uses(PluginType::kSessionAffinityScorer) && !request.session_id.empty()) {
    if (sessions_.size() >= kMaxSessions) sessions_.clear();
    sessions_[std::string(request.session_id)] = decision.chosen;
  }
  return decision;
}

PoolRouter::Scored PoolRouter::ScoreLocked(const RouteRequest& request, std::span<const EndpointSnapshot> snap,
                                           std::span<const uint64_t> approx, std::span<const uint64_t> precise) {
  const Clock::MonoTime now = clock_.Now();
  Scored out;
  std::vector<int> all(snap.size());
  std::iota(all.begin(), all.end(), 0);
  out.candidates = std::move(all);
  if (profile_.health_filter) out.candidates = FilterHealthy(snap, out.candidates);
  if (profile_.saturation_filter) out.candidates = FilterUnsaturated(snap, out.candidates, profile_.saturation);

  const std::vector<int>& cand = out.candidates;
  out.totals.assign(cand.size(), 0.0);
  for (size_t s = 0; s < profile_.scorers.size(); ++s) {
    const WeightedScorer& scorer = profile_.scorers[s];
    std::vector<double> scores;
    switch (scorer.type) {
      case PluginType::kQueueScorer:
        scores = QueueScores(snap, cand);
        break;
      case PluginType::kKvCacheUtilizationScorer:
        scores = KvCacheUtilizationScores(snap, cand);
        break;
      case PluginType::kActiveRequestScorer:
        scores = ActiveRequestScores(snap, cand);
        break;
      case PluginType::kSessionAffinityScorer: {
        int last = -1;
        if (!request.session_id.empty()) {
          auto it = sessions_.find(std::string(request.session_id));
          if (it != sessions_.end()) last = it->second;
        }
        scores = SessionAffinityScores(cand, last);
        break;
      }
      case PluginType::kPrefixCacheScorer:
      case PluginType::kPrecisePrefixCacheScorer: {
        const bool is_approx = scorer.type == PluginType::kPrefixCacheScorer;
        const std::span<const uint64_t> hashes = is_approx ? approx : precise;
        std::vector<int> matched;
        matched.reserve(cand.size());
        for (int c : cand) {
          matched.push_back(is_approx ? approx_.MatchLength(c, hashes) : precise_.MatchLength(c, hashes, now));
        }
        scores = PrefixScores(matched, static_cast<int>(hashes.size()));
        if (out.prefix.empty()) out.prefix = scores;
        break;
      }
      default:
        OMNI_CHECK(false) << "not a scorer: " << PluginTypeName(scorer.type);
    }
    for (size_t i = 0; i < cand.size(); ++i) {
      out.totals[i] += scorer.weight * scores[i];
      last_scores_[cand[i]][s] = scores[i];
    }
  }
  return out;
}

void PoolRouter::CommitLocked(int e, const RouteDecision& decision) {
  ++endpoints_[e].in_flight;
  ++endpoints_[e].picks_since_scrape;
  endpoints_[e].kv_tokens_since_scrape += decision.kv_tokens;
  if (!decision.approx_hashes.empty()) approx_.Record(e, decision.approx_hashes);
  if (!decision.precise_hashes.empty() && profile_.precise_pending_ttl.count() > 0) {
    const Clock::MonoTime now = clock_.Now();
    precise_.RecordRouted(e, decision.precise_hashes, now, now + profile_.precise_pending_ttl);
  }
}

void PoolRouter::Retarget(RouteDecision& decision, int to) {
  std::lock_guard lock(mu_);
  EndpointSnapshot& from = endpoints_[decision.chosen];
  from.in_flight = std::max(0, from.in_flight - 1);
  from.picks_since_scrape = std::max(0, from.picks_since_scrape - 1);
  from.kv_tokens_since_scrape -= decision.kv_tokens;
  CommitLocked(to, decision);
  decision.chosen = to;
}

void PoolRouter::Finish(int e, double kv_tokens) {
  std::lock_guard lock(mu_);
  endpoints_[e].in_flight = std::max(0, endpoints_[e].in_flight - 1);
  endpoints_[e].kv_tokens_since_scrape -= kv_tokens;
}

void PoolRouter::ReportLoad(int e, const EndpointLoad& load) {
  std::lock_guard lock(mu_);
  EndpointSnapshot& s = endpoints_[e];
  s.has_metrics = true;
  s.waiting = load.waiting;
  s.running = load.running;
  s.kv_usage = load.kv_usage;
  s.picks_since_scrape = 0;
  s.kv_tokens_since_scrape = 0;
  s.num_blocks = load.num_blocks;
  s.block_size = load.block_size > 0 ? load.block_size : 16;
  if (load.prompt_tokens_total >= 0) {
    // A restarted server counts from zero again: rebase without a delta.
    double& last = last_tokens_[e];
    if (last >= 0 && load.prompt_tokens_total >= last) counted_tokens_ += load.prompt_tokens_total - last;
    last = load.prompt_tokens_total;
  }
  SizeApproxIndexLocked(e);
  last_scrape_[e] = clock_.Now();
}

double PoolRouter::CharsPerTokenLocked() const {
  const double assumed = profile_.approx_block_chars / 16.0;  // llm-d: 64 characters = 16 tokens x 4
  if (counted_tokens_ < kCalibrationTokens || routed_chars_ <= 0) return assumed;
  return std::clamp(routed_chars_ / counted_tokens_, 0.25, 64.0);
}

void PoolRouter::SizeApproxIndexLocked(int e) {
  const int64_t blocks = endpoints_[e].num_blocks;
  if (blocks <= 0) {
    approx_.SetCapacity(e, 0);  // the profile's lruCapacityPerServer
    return;
  }
  const double tokens = static_cast<double>(blocks) * static_cast<double>(endpoints_[e].block_size);
  const double chars = tokens * CharsPerTokenLocked();
  approx_.SetCapacity(e, std::max<size_t>(1, static_cast<size_t>(chars / profile_.approx_block_chars)));
}

double PoolRouter::chars_per_token() const {
  std::lock_guard lock(mu_);
  return CharsPerTokenLocked();
}

size_t PoolRouter::approx_capacity(int e) const {
  std::lock_guard lock(mu_);
  return approx_.capacity(e);
}

bool PoolRouter::SetHealthy(int e, bool healthy) {
  std::lock_guard lock(mu_);
  if (endpoints_[e].healthy == healthy) return false;
  if (!healthy) {
    // A restarted server starts with an empty cache and sends no removals.
    precise_.ClearEndpoint(e);
    approx_.Clear(e);
    endpoints_[e].has_metrics = false;
  }
  endpoints_[e].healthy = healthy;
  return true;
}

void PoolRouter::ApplyKvEvents(int e, const KvEventBatch& batch) {
  std::lock_guard lock(mu_);
  precise_.Apply(e, batch);
}

std::vector<EndpointSnapshot> PoolRouter::Snapshot() const {
  std::lock_guard lock(mu_);
  return SnapshotLocked();
}

std::vector<EndpointSnapshot> PoolRouter::SnapshotLocked() const {
  std::vector<EndpointSnapshot> snap = endpoints_;
  const Clock::MonoTime now = clock_.Now();
  for (size_t e = 0; e < snap.size(); ++e) {
    snap[e].metrics_age_ms = std::chrono::duration<double, std::milli>(now - last_scrape_[e]).count();
  }
  return snap;
}

std::string PoolRouter::DebugJson() const {
  std::lock_guard lock(mu_);
  const std::vector<EndpointSnapshot> snap = SnapshotLocked();
  std::string out = "{\"profile\":";
  AppendJsonString(profile_.name, &out);
  out += ",\"picker\":";
  AppendJsonString(PluginTypeName(profile_.picker), &out);
  out += ",\"approx_chars_per_token\":" + std::to_string(CharsPerTokenLocked());
  out += ",\"endpoints\":[";
  for (size_t e = 0; e < snap.size(); ++e) {
    const EndpointSnapshot& s = snap[e];
    if (e > 0) out += ',';
    out += "{\"address\":";
    AppendJsonString(s.address, &out);
    out += ",\"healthy\":" + std::string(s.healthy ? "true" : "false");
    out += ",\"has_metrics\":" + std::string(s.has_metrics ? "true" : "false");
    if (s.has_metrics) out += ",\"metrics_age_ms\":" + std::to_string(s.metrics_age_ms);
    out += ",\"waiting\":" + std::to_string(s.waiting) + ",\"running\":" + std::to_string(s.running);
    out += ",\"kv_cache_usage\":" + std::to_string(s.kv_usage) + ",\"num_blocks\":" + std::to_string(s.num_blocks);
    out += ",\"block_size\":" + std::to_string(s.block_size);
    out += ",\"in_flight\":" + std::to_string(s.in_flight);
    out += ",\"picks_since_scrape\":" + std::to_string(s.picks_since_scrape);
    out += ",\"kv_tokens_since_scrape\":" + std::to_string(s.kv_tokens_since_scrape);
    out += ",\"effective_kv_cache_usage\":" + std::to_string(EffectiveKvUsage(s));
    out += ",\"approx_index_blocks\":" + std::to_string(approx_.size(static_cast<int>(e)));
    out += ",\"approx_index_capacity\":" + std::to_string(approx_.capacity(static_cast<int>(e)));
    out += ",\"precise_index_blocks\":" + std::to_string(precise_.blocks_held(static_cast<int>(e)));
    out += ",\"precise_pending_blocks\":" + std::to_string(precise_.blocks_pending(static_cast<int>(e)));
    out += ",\"last_scores\":{";
    for (size_t k = 0; k < profile_.scorers.size(); ++k) {
      if (k > 0) out += ',';
      AppendJsonString(profile_.scorers[k].name, &out);
      out += ':' + std::to_string(last_scores_[e][k]);
    }
    out += "}}";
  }
  out += "]}";
  return out;
}

bool RoutingProfile::Uses(PluginType type) const {
  return std::any_of(scorers.begin(), scorers.end(), [&](const WeightedScorer& s) { return s.type == type; });
}

}  // namespace omni::gateway
