// The routing policies the simulator compares, each a RoutingProfile built
// the way the gateway's config loader would build it (spec/routing.md), so
// the simulator runs the same filters, scorers and pickers as the gateway.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "services/gateway/routing_profile.h"

namespace omni::routing_sim {

enum class Policy {
  kRoundRobin,     // round-robin-picker, no scorers
  kRandom,         // random-picker
  kLoadOnly,       // queue-scorer 2 + kv-cache-utilization-scorer 2, max-score-picker
  kApproxPrefix,   // prefix-cache-scorer 3 + queue 2 + kv-cache-utilization 2
  kPrecisePrefix,  // precise-prefix-cache-scorer 3 + queue 2 + kv-cache-utilization 2
  kSingleReplica,  // one replica with the whole fleet's KV blocks: the hit-rate ceiling
};

// "round-robin", "random", "load-only", "approx-prefix", "precise-prefix",
// "single-replica".
std::string_view PolicyName(Policy policy);
// Every policy, in the order above.
std::span<const Policy> AllPolicies();
// A comma-separated list of names; "all" (or empty) means every policy.
StatusOr<std::vector<Policy>> ParsePolicies(std::string_view list);

// The profile; health and saturation filters on with their defaults, as
// for a config profile that lists no filter.
gateway::RoutingProfile PolicyProfile(Policy policy);

}  // namespace omni::routing_sim
