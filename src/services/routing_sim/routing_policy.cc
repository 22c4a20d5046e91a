#include "services/routing_sim/routing_policy.h"

#include <algorithm>
#include <string>

namespace omni::routing_sim {
namespace {

using gateway::WeightedScorer;

constexpr Policy kAll[] = {Policy::kRoundRobin,   Policy::kRandom,         Policy::kLoadOnly,
                           Policy::kApproxPrefix, Policy::kPrecisePrefix, Policy::kSingleReplica};

WeightedScorer Scorer(PluginType type, double weight) {
  return WeightedScorer{.type = type, .name = std::string(PluginTypeName(type)), .weight = weight};
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kRoundRobin: return "round-robin";
    case Policy::kRandom: return "random";
    case Policy::kLoadOnly: return "load-only";
    case Policy::kApproxPrefix: return "approx-prefix";
    case Policy::kPrecisePrefix: return "precise-prefix";
    case Policy::kSingleReplica: return "single-replica";
  }
  return "unknown";
}

std::span<const Policy> AllPolicies() { return kAll; }

StatusOr<std::vector<Policy>> ParsePolicies(std::string_view list) {
  if (Trim(list).empty() || Trim(list) == "all") return std::vector<Policy>(std::begin(kAll), std::end(kAll));
  std::vector<Policy> out;
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view name = Trim(list.substr(0, comma));
    auto it = std::find_if(std::begin(kAll), std::end(kAll), [&](Policy p) { return PolicyName(p) == name; });
    if (it == std::end(kAll)) {
      return InvalidArgument("unknown policy '" + std::string(name) +
                             "' (round-robin|random|load-only|approx-prefix|precise-prefix|single-replica|all)");
    }
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.push_back(*it);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

gateway::RoutingProfile PolicyProfile(Policy policy) {
  gateway::RoutingProfile p;
  p.name = std::string(PolicyName(policy));
  p.picker = PluginType::kMaxScorePicker;
  switch (policy) {
    case Policy::kRoundRobin:
    case Policy::kSingleReplica:
      p.picker = PluginType::kRoundRobinPicker;
      break;
    case Policy::kRandom:
      p.picker = PluginType::kRandomPicker;
      break;
    case Policy::kLoadOnly:
      p.scorers = {Scorer(PluginType::kQueueScorer, 2), Scorer(PluginType::kKvCacheUtilizationScorer, 2)};
      break;
    case Policy::kApproxPrefix:
      p.scorers = {Scorer(PluginType::kPrefixCacheScorer, 3), Scorer(PluginType::kQueueScorer, 2),
                   Scorer(PluginType::kKvCacheUtilizationScorer, 2)};
      break;
    case Policy::kPrecisePrefix:
      p.scorers = {Scorer(PluginType::kPrecisePrefixCacheScorer, 3), Scorer(PluginType::kQueueScorer, 2),
                   Scorer(PluginType::kKvCacheUtilizationScorer, 2)};
      break;
  }
  return p;
}

}  // namespace omni::routing_sim
