#include "services/gateway/gateway_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace omni {
namespace {

using ::testing::StartsWith;

// A valid last section for files whose subject is elsewhere.
constexpr std::string_view kOnePool =
    "pools:\n"
    "- name: p\n"
    "  role: llm\n"
    "  models: [m]\n"
    "  endpoints: [\"h:1\"]\n";

GatewayConfig MustParse(std::string_view yaml) {
  StatusOr<ConfigNode> root = ParseYaml(yaml, "gw.yaml");
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  StatusOr<GatewayConfig> config = ParseGatewayConfig(*root);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : GatewayConfig{};
}

std::string ConfigErrorOf(std::string_view yaml) {
  StatusOr<ConfigNode> root = ParseYaml(yaml, "gw.yaml");
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  if (!root.ok()) return "";
  StatusOr<GatewayConfig> config = ParseGatewayConfig(*root);
  EXPECT_FALSE(config.ok()) << "accepted:\n" << yaml;
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  return config.status().message();
}

std::vector<std::string> Refs(const SchedulingProfile& p) {
  std::vector<std::string> out;
  for (const ProfilePlugin& e : p.plugins) out.push_back(e.ref);
  return out;
}

TEST(GatewayConfigTest, PluginTypeNamesAndKinds) {
  struct Row {
    PluginType type;
    const char* name;
    PluginKind kind;
  };
  const Row rows[] = {
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
  for (const Row& row : rows) {
    EXPECT_EQ(PluginTypeName(row.type), row.name);
    EXPECT_EQ(KindOf(row.type), row.kind) << row.name;
    // Every type is accepted by the loader under its name.
    std::string yaml = std::string("plugins: [{type: ") + row.name + "}]\n" + std::string(kOnePool);
    GatewayConfig c = MustParse(yaml);
    ASSERT_NE(c.FindPlugin(row.name), nullptr) << row.name;
    EXPECT_EQ(c.FindPlugin(row.name)->type, row.type);
  }
  EXPECT_EQ(PoolRoleName(PoolRole::kLlm), "llm");
  EXPECT_EQ(PoolRoleName(PoolRole::kVisionEncoder), "vision-encoder");
  EXPECT_EQ(PoolRoleName(PoolRole::kAudioEncoder), "audio-encoder");
  EXPECT_EQ(PoolRoleName(PoolRole::kVisionDecoder), "vision-decoder");
  EXPECT_EQ(PoolRoleName(PoolRole::kAudioDecoder), "audio-decoder");
}

TEST(GatewayConfigTest, ReadsTheIssueExample) {
  GatewayConfig c = MustParse(R"(
plugins: [{type: prefix-cache-scorer}, {type: queue-scorer}, {type: kv-cache-utilization-scorer}, {type: max-score-picker}]
schedulingProfiles:
- name: default
  plugins: [{pluginRef: prefix-cache-scorer, weight: 3}, {pluginRef: queue-scorer, weight: 2},
            {pluginRef: kv-cache-utilization-scorer, weight: 2}, {pluginRef: max-score-picker}]
pools:
- {name: llm, role: llm, models: [omni-demo], endpoints: ["127.0.0.1:8101", "127.0.0.1:8102"], schedulingProfile: default}
)");
  ASSERT_EQ(c.plugins.size(), 4u);
  EXPECT_EQ(c.plugins[0].name, "prefix-cache-scorer");
  EXPECT_EQ(c.plugins[0].type, PluginType::kPrefixCacheScorer);
  EXPECT_EQ(c.plugins[0].params.block_size_chars, 64);
  EXPECT_EQ(c.plugins[0].params.max_prefix_blocks, 256);
  EXPECT_EQ(c.plugins[0].params.lru_capacity_per_server, 31250);
  ASSERT_EQ(c.profiles.size(), 1u);
  EXPECT_EQ(c.profiles[0].name, "default");
  EXPECT_EQ(Refs(c.profiles[0]), (std::vector<std::string>{"prefix-cache-scorer", "queue-scorer",
                                                            "kv-cache-utilization-scorer", "max-score-picker"}));
  EXPECT_EQ(c.profiles[0].plugins[0].weight, 3);
  EXPECT_EQ(c.profiles[0].plugins[1].weight, 2);
  EXPECT_EQ(c.profiles[0].plugins[2].weight, 2);
  EXPECT_EQ(c.profiles[0].plugins[3].weight, 1);
  ASSERT_EQ(c.pools.size(), 1u);
  EXPECT_EQ(c.pools[0].name, "llm");
  EXPECT_EQ(c.pools[0].role, PoolRole::kLlm);
  EXPECT_EQ(c.pools[0].models, (std::vector<std::string>{"omni-demo"}));
  EXPECT_EQ(c.pools[0].endpoints, (std::vector<std::string>{"127.0.0.1:8101", "127.0.0.1:8102"}));
  EXPECT_EQ(c.pools[0].scheduling_profile, "default");
  EXPECT_TRUE(c.pools[0].kv_events.empty());
  EXPECT_TRUE(c.pools[0].tokenizer.empty());
  EXPECT_EQ(c.FindPoolForModel("omni-demo"), &c.pools[0]);
  EXPECT_EQ(c.FindPoolForModel("other"), nullptr);
}

TEST(GatewayConfigTest, ReadsEveryFieldAndParameter) {
  GatewayConfig c = MustParse(R"(apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- {type: prefix-cache-scorer, parameters: {blockSize: 128, maxPrefixBlocksToMatch: 100, lruCapacityPerServer: 5000}}
- {type: queue-scorer, parameters: {}}
- {type: kv-cache-utilization-scorer}
- {type: saturation-filter, name: sat, parameters: {queueDepthThreshold: 16, kvCacheUsageThreshold: 0.95, metricsStalenessThresholdMs: 500}}
- {type: session-affinity-scorer, parameters: {headerName: X-Conversation}}
- {type: precise-prefix-cache-scorer, name: precise, parameters: {blockSize: 32, maxPrefixBlocksToMatch: 64, pendingTtlMs: 0}}
- {type: random-picker, name: rnd}
- type: max-score-picker
- type: health-filter
schedulingProfiles:
- name: default
  plugins:
  - {pluginRef: health-filter}
  - {pluginRef: sat}
  - {pluginRef: prefix-cache-scorer, weight: 3}
  - {pluginRef: queue-scorer, weight: 2}
  - {pluginRef: kv-cache-utilization-scorer, weight: 2.5}
  - {pluginRef: max-score-picker}
- name: precise
  plugins: [{pluginRef: precise}, {pluginRef: session-affinity-scorer, weight: 0}, {pluginRef: rnd}]
- name: nopicker
  plugins: [{pluginRef: queue-scorer}]
- name: empty
pools:
- name: llm
  role: llm
  models: [omni-demo, omni-demo-2]
  endpoints: ["127.0.0.1:8101", "localhost:8102", "[::1]:8103", "gpu-node-1.example.com:65535"]
  schedulingProfile: default
- {name: llm-precise, role: llm, models: [omni-precise], endpoints: ["10.0.0.1:9000"], schedulingProfile: precise,
   kvEvents: ["tcp://10.0.0.1:5557", "tcp://[::1]:5558"], tokenizer: /models/omni}
- {name: vision, role: vision-encoder, models: [omni-vision], endpoints: ["enc:1"], schedulingProfile: nopicker}
- {name: audio, role: audio-decoder, models: [omni-audio], endpoints: ["dec:2"], schedulingProfile: empty}
)");
  ASSERT_EQ(c.plugins.size(), 9u);  // none added: a max-score-picker exists
  const PluginParams& prefix = c.FindPlugin("prefix-cache-scorer")->params;
  EXPECT_EQ(prefix.block_size_chars, 128);
  EXPECT_EQ(prefix.max_prefix_blocks, 100);
  EXPECT_EQ(prefix.lru_capacity_per_server, 5000);
  const PluginParams& sat = c.FindPlugin("sat")->params;
  EXPECT_EQ(c.FindPlugin("sat")->type, PluginType::kSaturationFilter);
  EXPECT_EQ(sat.queue_depth_threshold, 16);
  EXPECT_EQ(sat.kv_cache_usage_threshold, 0.95);
  EXPECT_EQ(sat.metrics_staleness_ms, 500);
  EXPECT_EQ(c.FindPlugin("session-affinity-scorer")->params.header_name, "X-Conversation");
  const PluginParams& precise = c.FindPlugin("precise")->params;
  EXPECT_EQ(precise.block_size_tokens, 32);
  EXPECT_EQ(precise.max_prefix_blocks, 64);
  EXPECT_EQ(precise.pending_ttl_ms, 0);
  EXPECT_EQ(precise.block_size_chars, 64);  // the approximate scorer's key, untouched
  // Defaults where nothing was given.
  const PluginParams& queue = c.FindPlugin("queue-scorer")->params;
  EXPECT_EQ(queue.header_name, "x-session-id");
  EXPECT_EQ(queue.queue_depth_threshold, 128);
  EXPECT_EQ(queue.kv_cache_usage_threshold, 0.8);
  EXPECT_EQ(queue.metrics_staleness_ms, 200);
  EXPECT_EQ(queue.block_size_tokens, 16);
  EXPECT_EQ(queue.pending_ttl_ms, 2000);

  ASSERT_EQ(c.profiles.size(), 4u);
  EXPECT_EQ(Refs(c.profiles[0]), (std::vector<std::string>{"health-filter", "sat", "prefix-cache-scorer",
                                                            "queue-scorer", "kv-cache-utilization-scorer",
                                                            "max-score-picker"}));
  EXPECT_EQ(c.profiles[0].plugins[4].weight, 2.5);
  EXPECT_EQ(Refs(c.profiles[1]), (std::vector<std::string>{"precise", "session-affinity-scorer", "rnd"}));
  EXPECT_EQ(c.profiles[1].plugins[1].weight, 0);
  // A profile without a picker gets the existing max-score-picker.
  EXPECT_EQ(Refs(c.profiles[2]), (std::vector<std::string>{"queue-scorer", "max-score-picker"}));
  EXPECT_EQ(Refs(c.profiles[3]), (std::vector<std::string>{"max-score-picker"}));

  ASSERT_EQ(c.pools.size(), 4u);
  EXPECT_EQ(c.pools[0].models, (std::vector<std::string>{"omni-demo", "omni-demo-2"}));
  EXPECT_EQ(c.pools[0].endpoints.size(), 4u);
  EXPECT_EQ(c.pools[0].endpoints[2], "[::1]:8103");
  EXPECT_EQ(c.pools[1].kv_events, (std::vector<std::string>{"tcp://10.0.0.1:5557", "tcp://[::1]:5558"}));
  EXPECT_EQ(c.pools[1].tokenizer, "/models/omni");
  EXPECT_EQ(c.pools[1].scheduling_profile, "precise");
  EXPECT_EQ(c.pools[2].role, PoolRole::kVisionEncoder);
  EXPECT_EQ(c.pools[3].role, PoolRole::kAudioDecoder);
  EXPECT_EQ(c.FindPoolForModel("omni-demo-2"), &c.pools[0]);
  EXPECT_EQ(c.FindPoolForModel("omni-vision"), &c.pools[2]);
  EXPECT_EQ(c.FindProfile("precise"), &c.profiles[1]);
  EXPECT_EQ(c.FindProfile("nope"), nullptr);
  EXPECT_EQ(c.FindPlugin("nope"), nullptr);
}

TEST(GatewayConfigTest, NoProfilesImpliesADefaultWithOnlyAPicker) {
  GatewayConfig c = MustParse(kOnePool);
  ASSERT_EQ(c.plugins.size(), 1u);
  EXPECT_EQ(c.plugins[0].name, "max-score-picker");
  EXPECT_EQ(c.plugins[0].type, PluginType::kMaxScorePicker);
  ASSERT_EQ(c.profiles.size(), 1u);
  EXPECT_EQ(c.profiles[0].name, "default");
  EXPECT_EQ(Refs(c.profiles[0]), (std::vector<std::string>{"max-score-picker"}));
  EXPECT_EQ(c.pools[0].scheduling_profile, "default");

  GatewayConfig named = MustParse(std::string("schedulingProfiles: []\n") + std::string(kOnePool) +
                                  "  schedulingProfile: default\n");
  EXPECT_EQ(named.pools[0].scheduling_profile, "default");
}

TEST(GatewayConfigTest, ImpliedPickerAvoidsATakenName) {
  GatewayConfig c = MustParse(std::string(R"(plugins:
- {type: queue-scorer}
- {type: random-picker, name: max-score-picker}
schedulingProfiles:
- {name: only, plugins: [{pluginRef: queue-scorer}]}
)") + std::string(kOnePool));
  ASSERT_EQ(c.plugins.size(), 3u);
  EXPECT_EQ(c.plugins[2].name, "max-score-picker-2");
  EXPECT_EQ(c.plugins[2].type, PluginType::kMaxScorePicker);
  EXPECT_EQ(Refs(c.profiles[0]), (std::vector<std::string>{"queue-scorer", "max-score-picker-2"}));
  EXPECT_EQ(c.pools[0].scheduling_profile, "only");  // the only profile
}

TEST(GatewayConfigTest, JsonDocumentsAreAccepted) {
  GatewayConfig c = MustParse(
      R"({"plugins":[{"type":"queue-scorer"}],"pools":[{"name":"p","role":"llm","models":["m"],"endpoints":["h:1"]}]})");
  EXPECT_EQ(Refs(c.profiles[0]), (std::vector<std::string>{"max-score-picker"}));
  EXPECT_EQ(c.pools[0].endpoints, (std::vector<std::string>{"h:1"}));
}

TEST(GatewayConfigTest, LoadsAFileAndNamesItInErrors) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gwcfg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string good = (dir / "good.yaml").string();
  std::ofstream(good) << kOnePool;
  StatusOr<GatewayConfig> c = LoadGatewayConfig(good);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pools[0].name, "p");

  std::string bad = (dir / "bad.yaml").string();
  std::ofstream(bad) << kOnePool << "  colour: blue\n";
  c = LoadGatewayConfig(bad);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith(bad + ":6:11: pools[0].colour: unknown key"));

  c = LoadGatewayConfig((dir / "missing.yaml").string());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

// --- bad files: each message starts with file:line:col and the field path ---

TEST(GatewayConfigTest, RejectsUnknownKeys) {
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "extra: 1\n"),
              StartsWith("gw.yaml:6:8: extra: unknown key"));
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "  bogus: 2\n"),
              StartsWith("gw.yaml:6:10: pools[0].bogus: unknown key"));
  EXPECT_THAT(ConfigErrorOf("plugins:\n- type: queue-scorer\n  nme: q\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:3:8: plugins[0].nme: unknown key"));
  EXPECT_THAT(ConfigErrorOf("plugins:\n- type: queue-scorer\nschedulingProfiles:\n- name: d\n  plugins:\n"
                            "  - pluginRef: queue-scorer\n    wieght: 2\n" +
                            std::string(kOnePool)),
              StartsWith("gw.yaml:7:13: schedulingProfiles[0].plugins[0].wieght: unknown key"));
  EXPECT_THAT(ConfigErrorOf("schedulingProfiles:\n- name: d\n  pluginz: []\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:3:12: schedulingProfiles[0].pluginz: unknown key"));
}

TEST(GatewayConfigTest, RejectsKindAndShape) {
  EXPECT_THAT(ConfigErrorOf("kind: InferencePool\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:1:7: kind: must be EndpointPickerConfig"));
  EXPECT_THAT(ConfigErrorOf("- a\n"), StartsWith("gw.yaml:1:1: (top level): expected a map, got a list"));
  EXPECT_THAT(ConfigErrorOf("plugins: []\n"), StartsWith("gw.yaml:1:1: pools: required field is missing"));
  EXPECT_THAT(ConfigErrorOf("pools: []\n"), StartsWith("gw.yaml:1:8: pools: must list at least one pool"));
  EXPECT_THAT(ConfigErrorOf("pools: {name: p}\n"), StartsWith("gw.yaml:1:8: pools: expected a list, got a map"));
  EXPECT_THAT(ConfigErrorOf("pools:\n- just-a-name\n"),
              StartsWith("gw.yaml:2:3: pools[0]: expected a map, got a string"));
  EXPECT_THAT(ConfigErrorOf("plugins: {type: queue-scorer}\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:1:10: plugins: expected a list, got a map"));
}

TEST(GatewayConfigTest, RejectsBadPlugins) {
  EXPECT_THAT(ConfigErrorOf("plugins:\n- type: fancy-scorer\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:2:9: plugins[0].type: unknown plugin type `fancy-scorer` (known: "
                         "prefix-cache-scorer, precise-prefix-cache-scorer,"));
  EXPECT_THAT(ConfigErrorOf("plugins:\n- name: x\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:2:3: plugins[0].type: required field is missing"));
  // Two plugins of one type need names.
  EXPECT_THAT(ConfigErrorOf("plugins:\n- type: queue-scorer\n- type: queue-scorer\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:3:3: plugins[1].name: duplicate plugin name `queue-scorer` (also plugins[0]"));
  EXPECT_THAT(
      ConfigErrorOf("plugins:\n- {type: queue-scorer, name: q}\n- type: random-picker\n  name: q\n" +
                    std::string(kOnePool)),
      StartsWith("gw.yaml:4:9: plugins[1].name: duplicate plugin name `q`"));
  EXPECT_THAT(ConfigErrorOf("plugins:\n- type: queue-scorer\n  name: \"\"\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:3:9: plugins[0].name: must not be empty"));
}

TEST(GatewayConfigTest, RejectsBadParameters) {
  auto plugin = [](std::string_view type, std::string_view param_line) {
    return "plugins:\n- type: " + std::string(type) + "\n  parameters:\n    " + std::string(param_line) + "\n" +
           std::string(kOnePool);
  };
  EXPECT_THAT(ConfigErrorOf(plugin("queue-scorer", "blockSize: 4")),
              StartsWith("gw.yaml:4:16: plugins[0].parameters.blockSize: queue-scorer takes no parameters"));
  EXPECT_THAT(ConfigErrorOf(plugin("max-score-picker", "x: 1")),
              StartsWith("gw.yaml:4:8: plugins[0].parameters.x: max-score-picker takes no parameters"));
  EXPECT_THAT(ConfigErrorOf(plugin("prefix-cache-scorer", "headerName: x")),
              StartsWith("gw.yaml:4:17: plugins[0].parameters.headerName: unknown key"));
  EXPECT_THAT(ConfigErrorOf(plugin("precise-prefix-cache-scorer", "lruCapacityPerServer: 5")),
              StartsWith("gw.yaml:4:27: plugins[0].parameters.lruCapacityPerServer: unknown key"));
  EXPECT_THAT(ConfigErrorOf(plugin("prefix-cache-scorer", "blockSize: 0")),
              StartsWith("gw.yaml:4:16: plugins[0].parameters.blockSize: must be > 0"));
  EXPECT_THAT(ConfigErrorOf(plugin("prefix-cache-scorer", "blockSize: 1.5")),
              StartsWith("gw.yaml:4:16: plugins[0].parameters.blockSize: expected an integer, got a number"));
  EXPECT_THAT(ConfigErrorOf(plugin("prefix-cache-scorer", "lruCapacityPerServer: 99999999999")),
              StartsWith("gw.yaml:4:27: plugins[0].parameters.lruCapacityPerServer: integer out of range"));
  EXPECT_THAT(ConfigErrorOf(plugin("precise-prefix-cache-scorer", "maxPrefixBlocksToMatch: -1")),
              StartsWith("gw.yaml:4:29: plugins[0].parameters.maxPrefixBlocksToMatch: must be > 0"));
  EXPECT_THAT(ConfigErrorOf(plugin("precise-prefix-cache-scorer", "pendingTtlMs: -5")),
              StartsWith("gw.yaml:4:19: plugins[0].parameters.pendingTtlMs: must be >= 0"));
  EXPECT_THAT(ConfigErrorOf(plugin("saturation-filter", "kvCacheUsageThreshold: 1.5")),
              StartsWith("gw.yaml:4:28: plugins[0].parameters.kvCacheUsageThreshold: must be in (0, 1]"));
  EXPECT_THAT(ConfigErrorOf(plugin("saturation-filter", "queueDepthThreshold: -3")),
              StartsWith("gw.yaml:4:26: plugins[0].parameters.queueDepthThreshold: must be a number >= 0"));
  EXPECT_THAT(ConfigErrorOf(plugin("saturation-filter", "metricsStalenessThresholdMs: 0")),
              StartsWith("gw.yaml:4:34: plugins[0].parameters.metricsStalenessThresholdMs: must be > 0"));
  EXPECT_THAT(ConfigErrorOf(plugin("session-affinity-scorer", "headerName: \"x session\"")),
              StartsWith("gw.yaml:4:17: plugins[0].parameters.headerName: must be an HTTP header name"));
  EXPECT_THAT(ConfigErrorOf("plugins:\n- type: queue-scorer\n  parameters: 3\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:3:15: plugins[0].parameters: expected a map, got an integer"));
}

TEST(GatewayConfigTest, RejectsBadProfiles) {
  const std::string plugins =
      "plugins:\n- type: queue-scorer\n- type: max-score-picker\n- type: random-picker\n- type: health-filter\n";
  auto profile = [&](std::string_view entries) {
    return plugins + "schedulingProfiles:\n- name: default\n  plugins:\n" + std::string(entries) +
           std::string(kOnePool);
  };
  // The profile entries start on line 9.
  EXPECT_THAT(ConfigErrorOf(profile("  - pluginRef: nope\n")),
              StartsWith("gw.yaml:9:16: schedulingProfiles[0].plugins[0].pluginRef: no plugin named `nope` "
                         "(plugins: queue-scorer, max-score-picker, random-picker, health-filter)"));
  EXPECT_THAT(ConfigErrorOf(profile("  - pluginRef: max-score-picker\n  - pluginRef: random-picker\n")),
              StartsWith("gw.yaml:10:16: schedulingProfiles[0].plugins[1].pluginRef: a second picker "
                         "`random-picker`; profile `default` already has `max-score-picker` and takes one picker"));
  EXPECT_THAT(ConfigErrorOf(profile("  - pluginRef: max-score-picker\n    weight: 2\n")),
              StartsWith("gw.yaml:10:13: schedulingProfiles[0].plugins[0].weight: weight applies only to "
                         "scorers; `max-score-picker` is a picker"));
  EXPECT_THAT(ConfigErrorOf(profile("  - pluginRef: health-filter\n    weight: 1\n")),
              StartsWith("gw.yaml:10:13: schedulingProfiles[0].plugins[0].weight: weight applies only to "
                         "scorers; `health-filter` is a filter"));
  EXPECT_THAT(ConfigErrorOf(profile("  - pluginRef: queue-scorer\n    weight: -1\n")),
              StartsWith("gw.yaml:10:13: schedulingProfiles[0].plugins[0].weight: must be >= 0"));
  EXPECT_THAT(ConfigErrorOf(profile("  - pluginRef: queue-scorer\n    weight: heavy\n")),
              StartsWith("gw.yaml:10:13: schedulingProfiles[0].plugins[0].weight: expected a number, got a string"));
  EXPECT_THAT(ConfigErrorOf(profile("  - pluginRef: queue-scorer\n  - {pluginRef: queue-scorer, weight: 2}\n")),
              StartsWith("gw.yaml:10:17: schedulingProfiles[0].plugins[1].pluginRef: `queue-scorer` is listed "
                         "twice in this profile"));
  EXPECT_THAT(ConfigErrorOf(profile("  - weight: 2\n")),
              StartsWith("gw.yaml:9:5: schedulingProfiles[0].plugins[0].pluginRef: required field is missing"));
  EXPECT_THAT(ConfigErrorOf(plugins + "schedulingProfiles:\n- name: a\n- name: a\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:8:9: schedulingProfiles[1].name: duplicate profile name `a`"));
  EXPECT_THAT(ConfigErrorOf(plugins + "schedulingProfiles:\n- plugins: []\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:7:3: schedulingProfiles[0].name: required field is missing"));
}

TEST(GatewayConfigTest, RejectsBadPools) {
  auto pool = [](std::string_view role, std::string_view models, std::string_view endpoints,
                 std::string_view extra = "") {
    return "pools:\n- name: p\n  role: " + std::string(role) + "\n  models: " + std::string(models) +
           "\n  endpoints: " + std::string(endpoints) + "\n" + std::string(extra);
  };
  EXPECT_THAT(ConfigErrorOf(pool("gpu", "[m]", "[\"h:1\"]")),
              StartsWith("gw.yaml:3:9: pools[0].role: unknown role `gpu` (known: llm, vision-encoder, "
                         "audio-encoder, vision-decoder, audio-decoder)"));
  EXPECT_THAT(ConfigErrorOf("pools:\n- {name: p, models: [m], endpoints: [\"h:1\"]}\n"),
              StartsWith("gw.yaml:2:3: pools[0].role: required field is missing"));
  EXPECT_THAT(ConfigErrorOf("pools:\n- {role: llm, models: [m], endpoints: [\"h:1\"]}\n"),
              StartsWith("gw.yaml:2:3: pools[0].name: required field is missing"));
  EXPECT_THAT(ConfigErrorOf(pool("llm", "[]", "[\"h:1\"]")),
              StartsWith("gw.yaml:4:11: pools[0].models: must list at least one entry"));
  EXPECT_THAT(ConfigErrorOf(pool("llm", "[m]", "[]")),
              StartsWith("gw.yaml:5:14: pools[0].endpoints: must list at least one entry"));
  EXPECT_THAT(ConfigErrorOf("pools:\n- {name: p, role: llm, models: [m]}\n"),
              StartsWith("gw.yaml:2:3: pools[0].endpoints: required field is missing"));
  EXPECT_THAT(ConfigErrorOf(pool("llm", "[m, n, m]", "[\"h:1\"]")),
              StartsWith("gw.yaml:4:18: pools[0].models[2]: duplicate entry `m`"));
  EXPECT_THAT(ConfigErrorOf(pool("llm", "[m, \"\"]", "[\"h:1\"]")),
              StartsWith("gw.yaml:4:15: pools[0].models[1]: must not be empty"));
  EXPECT_THAT(ConfigErrorOf(pool("llm", "[m]", "[\"h:1\", \"h:0\"]")),
              StartsWith("gw.yaml:5:22: pools[0].endpoints[1]: `h:0` is not host:port: port must be a number in "
                         "1..65535"));
  EXPECT_THAT(ConfigErrorOf(pool("llm", "[m]", "[\"h:1\", \"h:1\"]")),
              StartsWith("gw.yaml:5:22: pools[0].endpoints[1]: duplicate entry `h:1`"));
  EXPECT_THAT(ConfigErrorOf(pool("llm", "[m]", "[\"h:1\"]", "  tokenizer: \"\"\n")),
              StartsWith("gw.yaml:6:14: pools[0].tokenizer: must not be empty"));
}

TEST(GatewayConfigTest, RejectsEndpointsThatAreNotHostPort) {
  const std::pair<const char*, const char*> cases[] = {
      {"localhost", "missing `:port`"},
      {":8000", "empty host"},
      {"h:", "port must be a number in 1..65535"},
      {"h:65536", "port must be a number in 1..65535"},
      {"h:-1", "port must be a number in 1..65535"},
      {"h:+80", "port must be a number in 1..65535"},
      {"h:80x", "port must be a number in 1..65535"},
      {"h:99999999999999999999", "port must be a number in 1..65535"},
      {"::1:8000", "an IPv6 address must be in brackets, e.g. [::1]:8101"},
      {"[::1]8000", "missing `:port` after the IPv6 address"},
      {"[::1:8000", "unterminated `[` of an IPv6 address"},
      {"[]:80", "empty host"},
      {"[fe80::1%eth0]:80", "bad character in IPv6 address"},
      {"http://h:80", "write it without a scheme"},
      {"h h:80", "bad character in host"},
      {"h/x:80", "bad character in host"},
  };
  for (const auto& [endpoint, why] : cases) {
    std::string yaml = "pools:\n- name: p\n  role: llm\n  models: [m]\n  endpoints: [\"" + std::string(endpoint) +
                       "\"]\n";
    EXPECT_EQ(ConfigErrorOf(yaml),
              "gw.yaml:5:15: pools[0].endpoints[0]: `" + std::string(endpoint) + "` is not host:port: " + why);
  }
}

TEST(GatewayConfigTest, RejectsPoolCrossReferences) {
  const std::string two_profiles =
      "schedulingProfiles:\n- name: a\n- name: b\n";  // lines 1-3
  EXPECT_THAT(ConfigErrorOf(two_profiles + std::string(kOnePool)),
              StartsWith("gw.yaml:5:3: pools[0].schedulingProfile: required when there are several scheduling "
                         "profiles (a, b)"));
  EXPECT_THAT(ConfigErrorOf(two_profiles + std::string(kOnePool) + "  schedulingProfile: c\n"),
              StartsWith("gw.yaml:9:22: pools[0].schedulingProfile: no scheduling profile named `c` (profiles: a, b)"));
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "- {name: p, role: llm, models: [z], endpoints: [\"h:1\"]}\n"),
              StartsWith("gw.yaml:6:10: pools[1].name: duplicate pool name `p`"));
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "- {name: q, role: llm, models: [z, m], endpoints: [\"h:2\"]}\n"),
              StartsWith("gw.yaml:6:36: pools[1].models[1]: model `m` is already served by pool `p`"));
}

TEST(GatewayConfigTest, RejectsBadKvEvents) {
  const std::string head =  // lines 1-2; the pool starts on line 4
      "plugins: [{type: precise-prefix-cache-scorer}]\n"
      "schedulingProfiles: [{name: precise, plugins: [{pluginRef: precise-prefix-cache-scorer}]}]\n";
  EXPECT_THAT(ConfigErrorOf(head + std::string(kOnePool)),
              StartsWith("gw.yaml:4:3: pools[0].kvEvents: profile `precise` uses precise-prefix-cache-scorer, "
                         "which needs the pool's KV-event publishers"));
  EXPECT_THAT(ConfigErrorOf(head + std::string(kOnePool) + "  kvEvents: []\n"),
              StartsWith("gw.yaml:8:13: pools[0].kvEvents: profile `precise` uses precise-prefix-cache-scorer"));
  // Declared but used by no profile: no KV events needed.
  EXPECT_EQ(MustParse("plugins: [{type: precise-prefix-cache-scorer}]\n" + std::string(kOnePool)).pools.size(), 1u);
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "  kvEvents: [\"127.0.0.1:5557\"]\n"),
              StartsWith("gw.yaml:6:14: pools[0].kvEvents[0]: `127.0.0.1:5557` is not tcp://host:port: must start "
                         "with tcp://"));
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "  kvEvents: [\"tcp://h:5557\", \"ipc:///tmp/kv\"]\n"),
              StartsWith("gw.yaml:6:30: pools[0].kvEvents[1]: `ipc:///tmp/kv` is not tcp://host:port: must start "
                         "with tcp://"));
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "  kvEvents: [\"tcp://*:5557\"]\n"),
              StartsWith("gw.yaml:6:14: pools[0].kvEvents[0]: `tcp://*:5557` is not tcp://host:port: bad character "
                         "in host"));
  EXPECT_THAT(ConfigErrorOf(std::string(kOnePool) + "  kvEvents: tcp://h:1\n"),
              StartsWith("gw.yaml:6:13: pools[0].kvEvents: expected a list, got a string"));
}

TEST(GatewayConfigTest, StoreForMediaParts) {
  GatewayConfig none = MustParse(kOnePool);
  EXPECT_EQ(none.store, "");
  EXPECT_EQ(none.store_timeout_ms, 500);
  GatewayConfig c = MustParse("store: 's3://emb/p?endpoint=http://127.0.0.1:9000'\nstoreTimeoutMs: 250\n" +
                              std::string(kOnePool));
  EXPECT_EQ(c.store, "s3://emb/p?endpoint=http://127.0.0.1:9000");
  EXPECT_EQ(c.store_timeout_ms, 250);
  EXPECT_EQ(MustParse("store: file:///var/lib/omniserve/store\n" + std::string(kOnePool)).store,
            "file:///var/lib/omniserve/store");
  EXPECT_THAT(ConfigErrorOf("store: /var/lib/store\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:1:8: store: must be a file:///dir or s3://"));
  EXPECT_THAT(ConfigErrorOf("storeTimeoutMs: 0\n" + std::string(kOnePool)),
              StartsWith("gw.yaml:1:17: storeTimeoutMs: must be > 0"));
}

}  // namespace
}  // namespace omni
