#include "services/gateway/routing_profile.h"

namespace omni::gateway {

StatusOr<RoutingProfile> ResolveRoutingProfile(const GatewayConfig& config, const PoolConfig& pool) {
  RoutingProfile out;
  const SchedulingProfile* profile = config.FindProfile(pool.scheduling_profile);
  if (profile == nullptr) {
    // The loader fills in the profile name; an empty one means the implied
    // default: no scorers, max-score picker (ties -> uniformly random).
    if (!pool.scheduling_profile.empty()) {
      return InvalidArgument("pool " + pool.name + ": no scheduling profile " + pool.scheduling_profile);
    }
    return out;
  }
  out.name = profile->name;
  bool any_filter = false;
  for (const ProfilePlugin& ref : profile->plugins) {
    const PluginConfig* plugin = config.FindPlugin(ref.ref);
    if (plugin == nullptr) return InvalidArgument("profile " + profile->name + ": no plugin " + ref.ref);
    const PluginParams& p = plugin->params;
    switch (KindOf(plugin->type)) {
      case PluginKind::kScorer:
        out.scorers.push_back({plugin->type, plugin->name, ref.weight});
        break;
      case PluginKind::kPicker:
        out.picker = plugin->type;
        break;
      case PluginKind::kFilter:
        if (!any_filter) out.health_filter = out.saturation_filter = false;
        any_filter = true;
        break;
    }
    switch (plugin->type) {
      case PluginType::kPrefixCacheScorer:
        out.approx_block_chars = p.block_size_chars;
        out.lru_capacity_per_server = static_cast<size_t>(p.lru_capacity_per_server);
        out.max_prefix_blocks = p.max_prefix_blocks;
        break;
      case PluginType::kPrecisePrefixCacheScorer:
        out.precise_block_size = p.block_size_tokens;
        out.precise_pending_ttl = std::chrono::milliseconds(p.pending_ttl_ms);
        out.max_prefix_blocks = p.max_prefix_blocks;
        break;
      case PluginType::kSessionAffinityScorer:
        out.session_header = p.header_name;
        break;
      case PluginType::kHealthFilter:
        out.health_filter = true;
        break;
      case PluginType::kSaturationFilter:
        out.saturation_filter = true;
        out.saturation = SaturationLimits{.queue_depth = p.queue_depth_threshold,
                                          .kv_cache_usage = p.kv_cache_usage_threshold,
                                          .metrics_staleness_ms = static_cast<double>(p.metrics_staleness_ms)};
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace omni::gateway
