// The gateway's YAML config (docs/GATEWAY.md): the EndpointPickerConfig keys
// of GAIE/llm-d (`plugins`, `schedulingProfiles`; spec/routing.md) plus the
// `pools` the gateway routes to by the request's `model`.
//
// Read once at start through core/config.h and validated whole, so a bad file
// fails with the position and field path of the first problem:
//
//   gateway.yaml:9:27: schedulingProfiles[0].plugins[1].weight: weight applies only to scorers; `max-score-picker` is a picker
//
// Rules beyond types: unknown keys anywhere, unknown plugin types and roles
// are rejected; plugin names (default: the type) and profile and pool names
// are unique; a pluginRef names a plugin; a profile holds at most one picker
// and one mention of each plugin; weights are for scorers and are finite and
// >= 0; every pool has models and `host:port` endpoints, no model is served by
// two pools, `kvEvents` are `tcp://host:port`, a pool whose profile uses
// precise-prefix-cache-scorer has kvEvents, and `store` is a file:// or s3://
// URI.
//
// Filled in while reading, so consumers see no implicit cases:
// - a profile without a picker gets `max-score-picker` appended (a plugin of
//   that type is added to `plugins` when none exists);
// - with no `schedulingProfiles`, one profile named "default" holding only
//   the picker is added: every endpoint scores 0, and max-score-picker's random
//   tie-break makes that a uniform random choice among the filtered endpoints;
// - a pool without `schedulingProfile` gets the only profile; naming none
//   when there are several is an error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace omni {

enum class PluginType {
  kPrefixCacheScorer,
  kPrecisePrefixCacheScorer,
  kKvCacheUtilizationScorer,
  kQueueScorer,
  kActiveRequestScorer,
  kSessionAffinityScorer,
  kMaxScorePicker,
  kRandomPicker,
  kWeightedRandomPicker,
  kRoundRobinPicker,
  kHealthFilter,
  kSaturationFilter,
};

enum class PluginKind { kScorer, kPicker, kFilter };

PluginKind KindOf(PluginType type);
// The config spelling, e.g. "prefix-cache-scorer".
std::string_view PluginTypeName(PluginType type);
std::string_view PluginKindName(PluginKind kind);  // "scorer", "picker", "filter"

// The `parameters` of a plugin. Each type reads only its own keys (listed
// with their YAML names); the rest keep these defaults.
struct PluginParams {
  int block_size_chars = 64;             // prefix-cache-scorer `blockSize`: 16 tokens x 4 chars
  int max_prefix_blocks = 256;           // prefix-cache-scorer, precise-prefix-cache-scorer `maxPrefixBlocksToMatch`
  int lru_capacity_per_server = 31250;   // prefix-cache-scorer `lruCapacityPerServer` (blocks)
  std::string header_name = "x-session-id";  // session-affinity-scorer `headerName`
  double queue_depth_threshold = 128;    // saturation-filter `queueDepthThreshold` (waiting requests)
  double kv_cache_usage_threshold = 0.8;  // saturation-filter `kvCacheUsageThreshold` (0..1)
  int metrics_staleness_ms = 200;        // saturation-filter `metricsStalenessThresholdMs`
  int block_size_tokens = 16;            // precise-prefix-cache-scorer `blockSize` (tokens)
  int pending_ttl_ms = 2000;             // precise-prefix-cache-scorer `pendingTtlMs`; 0: off
};

struct PluginConfig {
  std::string name;  // unique; defaults to PluginTypeName(type)
  PluginType type = PluginType::kMaxScorePicker;
  PluginParams params;
};

// One entry of a profile: a plugin by name, with a weight if it is a scorer.
struct ProfilePlugin {
  std::string ref;  // a PluginConfig::name
  double weight = 1;
};

// Plugins in file order; exactly one of them is a picker after reading.
struct SchedulingProfile {
  std::string name;
  std::vector<ProfilePlugin> plugins;
};

enum class PoolRole { kLlm, kVisionEncoder, kAudioEncoder, kVisionDecoder, kAudioDecoder };

// "llm", "vision-encoder", "audio-encoder", "vision-decoder", "audio-decoder".
std::string_view PoolRoleName(PoolRole role);

struct PoolConfig {
  std::string name;
  PoolRole role = PoolRole::kLlm;
  std::vector<std::string> models;     // non-empty, unique across pools
  std::vector<std::string> endpoints;  // "host:port" ("[::1]:8101" for IPv6), non-empty
  std::string scheduling_profile;      // a SchedulingProfile::name, always set after reading
  std::vector<std::string> kv_events;  // "tcp://host:port" ZeroMQ publishers of KV events
  std::string tokenizer;               // model dir for the precise scorer; empty if not given
};

struct GatewayConfig {
  std::vector<PluginConfig> plugins;
  std::vector<SchedulingProfile> profiles;
  std::vector<PoolConfig> pools;  // at least one
  // The object store the embedding objects of media parts live in
  // (file:///dir or s3://bucket...; `store`), so the precise scorer can HEAD
  // a part's object and score the prompt past it. Empty: prompts are scored
  // up to their first media part.
  std::string store;
  int store_timeout_ms = 500;  // `storeTimeoutMs`: one HEAD's limit (s3://; one attempt)

  // nullptr when absent.
  const PluginConfig* FindPlugin(std::string_view name) const;
  const SchedulingProfile* FindProfile(std::string_view name) const;
  const PoolConfig* FindPoolForModel(std::string_view model) const;
};

StatusOr<GatewayConfig> ParseGatewayConfig(const ConfigNode& root);
StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path);

}  // namespace omni
