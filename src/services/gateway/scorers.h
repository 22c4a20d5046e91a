// Filters and scorers of the endpoint-picking pipeline, as pure functions
// over snapshots (llm-d semantics, spec/routing.md). Every scorer returns one
// score in [0, 1] per candidate, in the candidates' order.
#pragma once

#include <span>
#include <vector>

#include "services/gateway/endpoint_state.h"

namespace omni::gateway {

struct SaturationLimits {
  double queue_depth = 128;      // waiting (plus picks since the scrape) above this: saturated
  double kv_cache_usage = 0.8;   // above this: saturated
  double metrics_staleness_ms = 200;  // no metrics, or older: saturated
};

// The candidates (indices into `endpoints`) that pass; every endpoint if none
// would (fail open).
std::vector<int> FilterHealthy(std::span<const EndpointSnapshot> endpoints, std::span<const int> candidates);
std::vector<int> FilterUnsaturated(std::span<const EndpointSnapshot> endpoints, std::span<const int> candidates,
                                   const SaturationLimits& limits);

// The queue the scorer sees: the scraped waiting count plus the requests the
// gateway sent since that scrape (which the scrape cannot show yet).
double EffectiveQueue(const EndpointSnapshot& e);
// The KV usage the scorers see: the scraped usage plus the prompt tokens of
// the requests picked since that scrape, less those of the requests that
// finished since, over the endpoint's KV capacity; clamped to [0, 1].
double EffectiveKvUsage(const EndpointSnapshot& e);

// (maxQ - q) / (maxQ - minQ) over the candidates; 1 when all are equal.
std::vector<double> QueueScores(std::span<const EndpointSnapshot> endpoints, std::span<const int> candidates);
// 1 - kv_cache_usage_perc.
std::vector<double> KvCacheUtilizationScores(std::span<const EndpointSnapshot> endpoints,
                                             std::span<const int> candidates);
// (maxA - a) / maxA over the gateway's in-flight counts; 1 when all are 0.
std::vector<double> ActiveRequestScores(std::span<const EndpointSnapshot> endpoints,
                                        std::span<const int> candidates);
// matched[i] / total_blocks; 0 when the prompt has no full block.
std::vector<double> PrefixScores(std::span<const int> matched_blocks, int total_blocks);
// 1 for the endpoint the session went to last (-1: none), else 0.
std::vector<double> SessionAffinityScores(std::span<const int> candidates, int session_endpoint);

}  // namespace omni::gateway
