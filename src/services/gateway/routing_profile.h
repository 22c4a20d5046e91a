// A scheduling profile resolved for one pool: the filters, weighted scorers
// and picker the router runs, with their parameters. Built from the config
// file by ResolveRoutingProfile; tests and the simulator build it directly.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"
#include "services/gateway/gateway_config.h"
#include "services/gateway/scorers.h"

namespace omni::gateway {

struct WeightedScorer {
  PluginType type = PluginType::kQueueScorer;  // a scorer type
  std::string name;
  double weight = 1;
};

struct RoutingProfile {
  std::string name = "default";
  bool health_filter = true;
  bool saturation_filter = true;
  SaturationLimits saturation;
  std::vector<WeightedScorer> scorers;
  PluginType picker = PluginType::kMaxScorePicker;
  // prefix-cache-scorer
  int approx_block_chars = 64;
  size_t lru_capacity_per_server = 31'250;
  // both prefix scorers
  int max_prefix_blocks = 256;
  // precise-prefix-cache-scorer
  int precise_block_size = 16;
  // How long a routed request's blocks count as held by its endpoint before
  // that endpoint's own KV events must confirm them (its queueing, prefill
  // and the publish); 0 turns pending blocks off.
  std::chrono::milliseconds precise_pending_ttl{2000};
  // session-affinity-scorer
  std::string session_header = "x-session-id";

  bool Uses(PluginType type) const;
};

// The pool's profile with its plugins' parameters. When the profile lists no
// filter, both the health and the saturation filter run with their defaults.
StatusOr<RoutingProfile> ResolveRoutingProfile(const GatewayConfig& config, const PoolConfig& pool);

}  // namespace omni::gateway
