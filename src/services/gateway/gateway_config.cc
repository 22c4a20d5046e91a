#include "services/gateway/gateway_config.h"

#include <charconv>
#include <cmath>
#include <optional>

namespace omni {
namespace {

struct PluginTypeInfo {
  PluginType type;
  std::string_view name;
  PluginKind kind;
};

constexpr PluginTypeInfo kPluginTypes[] = {
    {PluginType::kPrefixCacheScorer, "prefix-cache-scorer", PluginKind::kScorer},
    {PluginType::kPrecisePrefixCacheScorer, "precise-prefix-cache-scorer", PluginKind::kScorer},
    {PluginType::kKvCacheUtilizationScorer, "kv-cache-utilization-scorer", PluginKind::kScorer},
    {PluginType::kQueueScorer, "queue-scorer", PluginKind::kScorer},
    {PluginType::kActiveRequestScorer, "active-request-scorer", PluginKind::kScorer},
    {PluginType::kSessionAffinityScorer, "session-affinity-scorer", PluginKind::kScorer},
    {PluginType::kMaxScorePicker, "max-score-picker", PluginKind::kPicker},
    {PluginType::kRandomPicker, "random-picker", PluginKind::kPicker},
    {PluginType::kWeightedRandomPicker, "weighted-random-picker", PluginKind::kPicker},
    {PluginType::kRoundRobinPicker, "round-robin-picker", PluginKind::kPicker},
    {PluginType::kHealthFilter, "health-filter", PluginKind::kFilter},
    {PluginType::kSaturationFilter, "saturation-filter", PluginKind::kFilter},
};

constexpr std::pair<PoolRole, std::string_view> kPoolRoles[] = {
    {PoolRole::kLlm, "llm"},
    {PoolRole::kVisionEncoder, "vision-encoder"},
    {PoolRole::kAudioEncoder, "audio-encoder"},
    {PoolRole::kVisionDecoder, "vision-decoder"},
    {PoolRole::kAudioDecoder, "audio-decoder"},
};

const PluginTypeInfo& InfoOf(PluginType type) {
  for (const PluginTypeInfo& info : kPluginTypes) {
    if (info.type == type) return info;
  }
  OMNI_CHECK(false) << "unknown PluginType " << static_cast<int>(type);
  return kPluginTypes[0];
}

template <typename Range, typename Fn>
std::string JoinNames(const Range& items, Fn name_of) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += name_of(item);
  }
  return out.empty() ? "none" : out;
}

std::string Quoted(std::string_view s) { return "`" + std::string(s) + "`"; }
std::string IndexPath(std::string_view path, size_t i) { return std::string(path) + "[" + std::to_string(i) + "]"; }

// The list under `key`: *out stays nullptr when the key is absent or null.
Status GetList(ObjectReader& r, std::string_view key, const ConfigNode** out) {
  *out = r.GetNode(key);
  if (*out != nullptr && (*out)->kind != ConfigNode::Kind::kList) {
    return ConfigError(**out, r.ChildPath(key), "expected a list, got " + std::string((*out)->KindName()));
  }
  return Status::Ok();
}

// "host:port" with a port in 1..65535; an IPv6 host in brackets. Returns
// why not, or an empty string.
std::string CheckHostPort(std::string_view s) {
  if (s.find("://") != std::string_view::npos) return "write it without a scheme";
  std::string_view host, port;
  if (s.starts_with('[')) {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return "unterminated `[` of an IPv6 address";
    host = s.substr(1, close - 1);
    if (s.substr(close + 1, 1) != ":") return "missing `:port` after the IPv6 address";
    port = s.substr(close + 2);
    for (char c : host) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
      if (!ok) return "bad character in IPv6 address";
    }
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return "missing `:port`";
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return "an IPv6 address must be in brackets, e.g. [::1]:8101";
    for (char c : host) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
                c == '-' || c == '_';
      if (!ok) return "bad character in host";
    }
  }
  if (host.empty()) return "empty host";
  int value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || port[0] == '+' || port[0] == '-' || ec != std::errc() || end != port.data() + port.size() ||
      value < 1 || value > 65535) {
    return "port must be a number in 1..65535";
  }
  return {};
}

// Header field names are RFC 9110 tokens.
bool IsHeaderToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

Status ReadPositive(ObjectReader& r, std::string_view key, int* out) {
  OMNI_RETURN_IF_ERROR(r.GetInt(key, out));
  return r.Require(*out > 0, key, "must be > 0");
}

Status ReadParams(const ConfigNode& node, const std::string& path, PluginType type, PluginParams* p) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  switch (type) {
    case PluginType::kPrefixCacheScorer:
      OMNI_RETURN_IF_ERROR(ReadPositive(r, "blockSize", &p->block_size_chars));
      OMNI_RETURN_IF_ERROR(ReadPositive(r, "maxPrefixBlocksToMatch", &p->max_prefix_blocks));
      OMNI_RETURN_IF_ERROR(ReadPositive(r, "lruCapacityPerServer", &p->lru_capacity_per_server));
      break;
    case PluginType::kPrecisePrefixCacheScorer:
      OMNI_RETURN_IF_ERROR(ReadPositive(r, "blockSize", &p->block_size_tokens));
      OMNI_RETURN_IF_ERROR(ReadPositive(r, "maxPrefixBlocksToMatch", &p->max_prefix_blocks));
      OMNI_RETURN_IF_ERROR(r.GetInt("pendingTtlMs", &p->pending_ttl_ms));
      OMNI_RETURN_IF_ERROR(r.Require(p->pending_ttl_ms >= 0, "pendingTtlMs", "must be >= 0"));
      break;
    case PluginType::kSessionAffinityScorer:
      OMNI_RETURN_IF_ERROR(r.GetString("headerName", &p->header_name));
      OMNI_RETURN_IF_ERROR(r.Require(IsHeaderToken(p->header_name), "headerName", "must be an HTTP header name"));
      break;
    case PluginType::kSaturationFilter:
      OMNI_RETURN_IF_ERROR(r.GetDouble("queueDepthThreshold", &p->queue_depth_threshold));
      OMNI_RETURN_IF_ERROR(r.Require(std::isfinite(p->queue_depth_threshold) && p->queue_depth_threshold >= 0,
                                     "queueDepthThreshold", "must be a number >= 0"));
      OMNI_RETURN_IF_ERROR(r.GetDouble("kvCacheUsageThreshold", &p->kv_cache_usage_threshold));
      OMNI_RETURN_IF_ERROR(r.Require(p->kv_cache_usage_threshold > 0 && p->kv_cache_usage_threshold <= 1,
                                     "kvCacheUsageThreshold", "must be in (0, 1]"));
      OMNI_RETURN_IF_ERROR(ReadPositive(r, "metricsStalenessThresholdMs", &p->metrics_staleness_ms));
      break;
    default:
      if (!node.map.empty()) {
        return ConfigError(node.map.front().value, r.ChildPath(node.map.front().key),
                           std::string(PluginTypeName(type)) + " takes no parameters");
      }
      break;
  }
  return r.Finish();
}

Status ReadPlugin(const ConfigNode& node, const std::string& path, PluginConfig* out) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  std::string type;
  OMNI_RETURN_IF_ERROR(r.GetString("type", &type, /*required=*/true));
  const PluginTypeInfo* info = nullptr;
  for (const PluginTypeInfo& i : kPluginTypes) {
    if (i.name == type) info = &i;
  }
  if (info == nullptr) {
    return r.Error("type", "unknown plugin type " + Quoted(type) + " (known: " +
                               JoinNames(kPluginTypes, [](const PluginTypeInfo& i) { return i.name; }) + ")");
  }
  out->type = info->type;
  out->name = std::string(info->name);
  OMNI_RETURN_IF_ERROR(r.GetString("name", &out->name));
  OMNI_RETURN_IF_ERROR(r.Require(!out->name.empty(), "name", "must not be empty"));
  if (const ConfigNode* params = r.GetNode("parameters")) {
    OMNI_RETURN_IF_ERROR(ReadParams(*params, r.ChildPath("parameters"), out->type, &out->params));
  }
  return r.Finish();
}

Status ReadPlugins(ObjectReader& root, GatewayConfig* config) {
  const ConfigNode* list = nullptr;
  OMNI_RETURN_IF_ERROR(GetList(root, "plugins", &list));
  if (list == nullptr) return Status::Ok();
  for (size_t i = 0; i < list->list.size(); ++i) {
    std::string path = IndexPath("plugins", i);
    PluginConfig plugin;
    OMNI_RETURN_IF_ERROR(ReadPlugin(list->list[i], path, &plugin));
    for (size_t j = 0; j < config->plugins.size(); ++j) {
      if (config->plugins[j].name != plugin.name) continue;
      ObjectReader r(list->list[i], path);
      return r.Error("name", "duplicate plugin name " + Quoted(plugin.name) + " (also " + IndexPath("plugins", j) +
                                 "; give one a `name`)");
    }
    config->plugins.push_back(std::move(plugin));
  }
  return Status::Ok();
}

// One entry of a profile's `plugins`. *picker is the profile's picker so far.
Status ReadProfilePlugin(const ConfigNode& node, const std::string& path, const GatewayConfig& config,
                         SchedulingProfile* profile, const PluginConfig** picker) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  ProfilePlugin entry;
  OMNI_RETURN_IF_ERROR(r.GetString("pluginRef", &entry.ref, /*required=*/true));
  const PluginConfig* plugin = config.FindPlugin(entry.ref);
  if (plugin == nullptr) {
    return r.Error("pluginRef", "no plugin named " + Quoted(entry.ref) + " (plugins: " +
                                    JoinNames(config.plugins, [](const PluginConfig& p) { return p.name; }) + ")");
  }
  for (const ProfilePlugin& p : profile->plugins) {
    if (p.ref == entry.ref) return r.Error("pluginRef", Quoted(entry.ref) + " is listed twice in this profile");
  }
  PluginKind kind = KindOf(plugin->type);
  if (kind == PluginKind::kPicker) {
    if (*picker != nullptr) {
      return r.Error("pluginRef", "a second picker " + Quoted(entry.ref) + "; profile " + Quoted(profile->name) +
                                      " already has " + Quoted((*picker)->name) + " and takes one picker");
    }
    *picker = plugin;
  }
  if (r.GetNode("weight") != nullptr) {
    if (kind != PluginKind::kScorer) {
      return r.Error("weight", "weight applies only to scorers; " + Quoted(entry.ref) + " is a " +
                                   std::string(PluginKindName(kind)));
    }
    OMNI_RETURN_IF_ERROR(r.GetDouble("weight", &entry.weight));
    OMNI_RETURN_IF_ERROR(r.Require(std::isfinite(entry.weight) && entry.weight >= 0, "weight", "must be >= 0"));
  }
  OMNI_RETURN_IF_ERROR(r.Finish());
  profile->plugins.push_back(std::move(entry));
  return Status::Ok();
}

// The name of a max-score-picker plugin, adding one if there is none.
std::string ImpliedPicker(GatewayConfig* config) {
  for (const PluginConfig& p : config->plugins) {
    if (p.type == PluginType::kMaxScorePicker) return p.name;
  }
  std::string base(PluginTypeName(PluginType::kMaxScorePicker));
  std::string name = base;
  for (int n = 2; config->FindPlugin(name) != nullptr; ++n) name = base + "-" + std::to_string(n);
  config->plugins.push_back(PluginConfig{.name = name, .type = PluginType::kMaxScorePicker, .params = {}});
  return name;
}

Status ReadProfiles(ObjectReader& root, GatewayConfig* config) {
  const ConfigNode* list = nullptr;
  OMNI_RETURN_IF_ERROR(GetList(root, "schedulingProfiles", &list));
  std::vector<bool> has_picker;
  for (size_t i = 0; list != nullptr && i < list->list.size(); ++i) {
    std::string path = IndexPath("schedulingProfiles", i);
    ObjectReader r(list->list[i], path);
    OMNI_RETURN_IF_ERROR(r.CheckIsMap());
    SchedulingProfile profile;
    OMNI_RETURN_IF_ERROR(r.GetString("name", &profile.name, /*required=*/true));
    OMNI_RETURN_IF_ERROR(r.Require(!profile.name.empty(), "name", "must not be empty"));
    OMNI_RETURN_IF_ERROR(r.Require(config->FindProfile(profile.name) == nullptr, "name",
                                   "duplicate profile name " + Quoted(profile.name)));
    const ConfigNode* plugins = nullptr;
    OMNI_RETURN_IF_ERROR(GetList(r, "plugins", &plugins));
    const PluginConfig* picker = nullptr;
    for (size_t j = 0; plugins != nullptr && j < plugins->list.size(); ++j) {
      OMNI_RETURN_IF_ERROR(
          ReadProfilePlugin(plugins->list[j], IndexPath(r.ChildPath("plugins"), j), *config, &profile, &picker));
    }
    OMNI_RETURN_IF_ERROR(r.Finish());
    has_picker.push_back(picker != nullptr);
    config->profiles.push_back(std::move(profile));
  }
  if (config->profiles.empty()) {
    config->profiles.push_back(SchedulingProfile{.name = "default", .plugins = {}});
    has_picker.push_back(false);
  }
  // After all profiles are read, so an added picker cannot shadow a pluginRef.
  for (size_t i = 0; i < config->profiles.size(); ++i) {
    if (!has_picker[i]) config->profiles[i].plugins.push_back(ProfilePlugin{.ref = ImpliedPicker(config)});
  }
  return Status::Ok();
}

bool UsesType(const GatewayConfig& config, const SchedulingProfile& profile, PluginType type) {
  for (const ProfilePlugin& p : profile.plugins) {
    const PluginConfig* plugin = config.FindPlugin(p.ref);
    if (plugin != nullptr && plugin->type == type) return true;
  }
  return false;
}

// Reads a required, non-empty list of strings; `check` returns why an element
// is bad, or an empty string.
template <typename Check>
Status ReadNonEmptyList(ObjectReader& r, std::string_view key, std::vector<std::string>* out, Check check) {
  OMNI_RETURN_IF_ERROR(r.GetStringList(key, out, /*required=*/true));
  OMNI_RETURN_IF_ERROR(r.Require(!out->empty(), key, "must list at least one entry"));
  const ConfigNode* list = r.GetNode(key);
  for (size_t i = 0; i < out->size(); ++i) {
    std::string why = check((*out)[i]);
    for (size_t j = 0; why.empty() && j < i; ++j) {
      if ((*out)[j] == (*out)[i]) why = "duplicate entry " + Quoted((*out)[i]);
    }
    if (!why.empty()) return ConfigError(list->list[i], IndexPath(r.ChildPath(key), i), why);
  }
  return Status::Ok();
}

Status ReadPool(const ConfigNode& node, const std::string& path, const GatewayConfig& config, PoolConfig* pool) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("name", &pool->name, /*required=*/true));
  OMNI_RETURN_IF_ERROR(r.Require(!pool->name.empty(), "name", "must not be empty"));
  for (const PoolConfig& other : config.pools) {
    if (other.name == pool->name) return r.Error("name", "duplicate pool name " + Quoted(pool->name));
  }

  std::string role;
  OMNI_RETURN_IF_ERROR(r.GetString("role", &role, /*required=*/true));
  bool known_role = false;
  for (const auto& [value, name] : kPoolRoles) {
    if (name == role) {
      pool->role = value;
      known_role = true;
    }
  }
  if (!known_role) {
    return r.Error("role", "unknown role " + Quoted(role) + " (known: " +
                               JoinNames(kPoolRoles, [](const auto& e) { return e.second; }) + ")");
  }

  OMNI_RETURN_IF_ERROR(ReadNonEmptyList(r, "models", &pool->models, [&](const std::string& model) -> std::string {
    if (model.empty()) return "must not be empty";
    if (const PoolConfig* other = config.FindPoolForModel(model)) {
      return "model " + Quoted(model) + " is already served by pool " + Quoted(other->name);
    }
    return {};
  }));
  OMNI_RETURN_IF_ERROR(ReadNonEmptyList(r, "endpoints", &pool->endpoints, [](const std::string& e) {
    std::string why = CheckHostPort(e);
    return why.empty() ? why : Quoted(e) + " is not host:port: " + why;
  }));

  OMNI_RETURN_IF_ERROR(r.GetString("schedulingProfile", &pool->scheduling_profile));
  const SchedulingProfile* profile = nullptr;
  if (r.Has("schedulingProfile")) {
    profile = config.FindProfile(pool->scheduling_profile);
    if (profile == nullptr) {
      return r.Error("schedulingProfile",
                     "no scheduling profile named " + Quoted(pool->scheduling_profile) + " (profiles: " +
                         JoinNames(config.profiles, [](const SchedulingProfile& p) { return p.name; }) + ")");
    }
  } else if (config.profiles.size() == 1) {
    profile = &config.profiles.front();
    pool->scheduling_profile = profile->name;
  } else {
    return r.Error("schedulingProfile", "required when there are several scheduling profiles (" +
                                            JoinNames(config.profiles, [](const auto& p) { return p.name; }) + ")");
  }

  const ConfigNode* kv_events = r.GetNode("kvEvents");
  if (kv_events != nullptr) {
    OMNI_RETURN_IF_ERROR(r.GetStringList("kvEvents", &pool->kv_events));
    for (size_t i = 0; i < pool->kv_events.size(); ++i) {
      std::string_view e = pool->kv_events[i];
      std::string why = e.starts_with("tcp://") ? CheckHostPort(e.substr(6)) : "must start with tcp://";
      if (!why.empty()) {
        return ConfigError(kv_events->list[i], IndexPath(r.ChildPath("kvEvents"), i),
                           Quoted(e) + " is not tcp://host:port: " + why);
      }
    }
  }
  if (pool->kv_events.empty() && UsesType(config, *profile, PluginType::kPrecisePrefixCacheScorer)) {
    return r.Error("kvEvents", "profile " + Quoted(profile->name) +
                                   " uses precise-prefix-cache-scorer, which needs the pool's KV-event publishers "
                                   "(tcp://host:port)");
  }

  OMNI_RETURN_IF_ERROR(r.GetString("tokenizer", &pool->tokenizer));
  OMNI_RETURN_IF_ERROR(r.Require(!r.Has("tokenizer") || !pool->tokenizer.empty(), "tokenizer", "must not be empty"));
  return r.Finish();
}

Status ReadPools(ObjectReader& root, GatewayConfig* config) {
  const ConfigNode* list = nullptr;
  OMNI_RETURN_IF_ERROR(GetList(root, "pools", &list));
  if (list == nullptr) return root.Error("pools", "required field is missing");
  if (list->list.empty()) return root.Error("pools", "must list at least one pool");
  for (size_t i = 0; i < list->list.size(); ++i) {
    PoolConfig pool;
    OMNI_RETURN_IF_ERROR(ReadPool(list->list[i], IndexPath("pools", i), *config, &pool));
    config->pools.push_back(std::move(pool));
  }
  return Status::Ok();
}

}  // namespace

PluginKind KindOf(PluginType type) { return InfoOf(type).kind; }
std::string_view PluginTypeName(PluginType type) { return InfoOf(type).name; }

std::string_view PluginKindName(PluginKind kind) {
  switch (kind) {
    case PluginKind::kScorer: return "scorer";
    case PluginKind::kPicker: return "picker";
    case PluginKind::kFilter: return "filter";
  }
  return "?";
}

std::string_view PoolRoleName(PoolRole role) {
  for (const auto& [value, name] : kPoolRoles) {
    if (value == role) return name;
  }
  return "?";
}

const PluginConfig* GatewayConfig::FindPlugin(std::string_view name) const {
  for (const PluginConfig& p : plugins) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const SchedulingProfile* GatewayConfig::FindProfile(std::string_view name) const {
  for (const SchedulingProfile& p : profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const PoolConfig* GatewayConfig::FindPoolForModel(std::string_view model) const {
  for (const PoolConfig& pool : pools) {
    for (const std::string& m : pool.models) {
      if (m == model) return &pool;
    }
  }
  return nullptr;
}

StatusOr<GatewayConfig> ParseGatewayConfig(const ConfigNode& root) {
  ObjectReader r(root, "");
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  std::string api_version, kind;
  OMNI_RETURN_IF_ERROR(r.GetString("apiVersion", &api_version));  // any version of the shape is accepted
  OMNI_RETURN_IF_ERROR(r.GetString("kind", &kind));
  OMNI_RETURN_IF_ERROR(
      r.Require(!r.Has("kind") || kind == "EndpointPickerConfig", "kind", "must be EndpointPickerConfig"));
  GatewayConfig config;
  OMNI_RETURN_IF_ERROR(ReadPlugins(r, &config));
  OMNI_RETURN_IF_ERROR(ReadProfiles(r, &config));
  OMNI_RETURN_IF_ERROR(ReadPools(r, &config));
  OMNI_RETURN_IF_ERROR(r.GetString("store", &config.store));
  OMNI_RETURN_IF_ERROR(r.Require(!r.Has("store") || config.store.starts_with("file:///") ||
                                     config.store.starts_with("s3://"),
                                 "store", "must be a file:///dir or s3://bucket[/prefix]?endpoint=... URI"));
  OMNI_RETURN_IF_ERROR(r.GetInt("storeTimeoutMs", &config.store_timeout_ms));
  OMNI_RETURN_IF_ERROR(r.Require(config.store_timeout_ms > 0, "storeTimeoutMs", "must be > 0"));
  OMNI_RETURN_IF_ERROR(r.Finish());
  return config;
}

StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path) {
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, LoadConfigFile(path));
  return ParseGatewayConfig(root);
}

}  // namespace omni
