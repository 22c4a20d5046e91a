#include "services/gateway/scorers.h"

#include <algorithm>

namespace omni::gateway {
namespace {

template <typename Keep>
std::vector<int> FailOpenFilter(std::span<const int> candidates, Keep keep) {
  std::vector<int> kept;
  kept.reserve(candidates.size());
  for (int c : candidates) {
    if (keep(c)) kept.push_back(c);
  }
  if (kept.empty()) kept.assign(candidates.begin(), candidates.end());
  return kept;
}

}  // namespace

std::vector<int> FilterHealthy(std::span<const EndpointSnapshot> endpoints, std::span<const int> candidates) {
  return FailOpenFilter(candidates, [&](int c) { return endpoints[c].healthy; });
}

std::vector<int> FilterUnsaturated(std::span<const EndpointSnapshot> endpoints, std::span<const int> candidates,
                                   const SaturationLimits& limits) {
  return FailOpenFilter(candidates, [&](int c) {
    const EndpointSnapshot& e = endpoints[c];
    return e.has_metrics && e.metrics_age_ms <= limits.metrics_staleness_ms &&
           EffectiveQueue(e) <= limits.queue_depth && EffectiveKvUsage(e) <= limits.kv_cache_usage;
  });
}

double EffectiveQueue(const EndpointSnapshot& e) { return e.waiting + e.picks_since_scrape; }

double EffectiveKvUsage(const EndpointSnapshot& e) {
  const double capacity = static_cast<double>(e.num_blocks) * static_cast<double>(e.block_size);
  if (capacity <= 0) return e.kv_usage;
  return std::clamp(e.kv_usage + e.kv_tokens_since_scrape / capacity, 0.0, 1.0);
}

std::vector<double> QueueScores(std::span<const EndpointSnapshot> endpoints, std::span<const int> candidates) {
  std::vector<double> scores(candidates.size(), 1.0);
  if (candidates.empty()) return scores;
  double lo = EffectiveQueue(endpoints[candidates[0]]);
  double hi = lo;
  for (int c : candidates) {
    lo = std::min(lo, EffectiveQueue(endpoints[c]));
    hi = std::max(hi, EffectiveQueue(endpoints[c]));
  }
  if (hi == lo) return scores;
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = (hi - EffectiveQueue(endpoints[candidates[i]])) / (hi - lo);
  }
  return scores;
}

std::vector<double> KvCacheUtilizationScores(std::span<const EndpointSnapshot> endpoints,
                                             std::span<const int> candidates) {
  std::vector<double> scores;
  scores.reserve(candidates.size());
  for (int c : candidates) scores.push_back(std::clamp(1.0 - EffectiveKvUsage(endpoints[c]), 0.0, 1.0));
  return scores;
}

std::vector<double> ActiveRequestScores(std::span<const EndpointSnapshot> endpoints,
                                        std::span<const int> candidates) {
  std::vector<double> scores(candidates.size(), 1.0);
  int hi = 0;
  for (int c : candidates) hi = std::max(hi, endpoints[c].in_flight);
  if (hi == 0) return scores;
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = static_cast<double>(hi - endpoints[candidates[i]].in_flight) / hi;
  }
  return scores;
}

std::vector<double> PrefixScores(std::span<const int> matched_blocks, int total_blocks) {
  std::vector<double> scores(matched_blocks.size(), 0.0);
  if (total_blocks <= 0) return scores;
  for (size_t i = 0; i < matched_blocks.size(); ++i) {
    scores[i] = static_cast<double>(matched_blocks[i]) / total_blocks;
  }
  return scores;
}

std::vector<double> SessionAffinityScores(std::span<const int> candidates, int session_endpoint) {
  std::vector<double> scores;
  scores.reserve(candidates.size());
  for (int c : candidates) scores.push_back(c == session_endpoint ? 1.0 : 0.0);
  return scores;
}

}  // namespace omni::gateway
