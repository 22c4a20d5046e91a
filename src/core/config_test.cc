#include "core/config.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

struct Pool {
  std::string name;
  int port = 80;
  double weight = 1.0;
  bool enabled = true;
  std::vector<std::string> endpoints;

  static Status Read(const ConfigNode& node, const std::string& path, Pool* out) {
    ObjectReader r(node, path);
    OMNI_RETURN_IF_ERROR(r.CheckIsMap());
    OMNI_RETURN_IF_ERROR(r.GetString("name", &out->name, /*required=*/true));
    OMNI_RETURN_IF_ERROR(r.GetInt("port", &out->port));
    OMNI_RETURN_IF_ERROR(r.Require(out->port > 0 && out->port < 65536, "port", "must be in [1, 65535]"));
    OMNI_RETURN_IF_ERROR(r.GetDouble("weight", &out->weight));
    OMNI_RETURN_IF_ERROR(r.GetBool("enabled", &out->enabled));
    OMNI_RETURN_IF_ERROR(r.GetStringList("endpoints", &out->endpoints));
    return r.Finish();
  }
};

Status ReadPools(const ConfigNode& root, std::vector<Pool>* pools) {
  ObjectReader r(root, "");
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  const ConfigNode* list = r.GetNode("pools");
  if (list == nullptr) return r.Error("pools", "required field is missing");
  if (list->kind != ConfigNode::Kind::kList) return ConfigError(*list, "pools", "expected a list");
  for (size_t i = 0; i < list->list.size(); ++i) {
    OMNI_RETURN_IF_ERROR(Pool::Read(list->list[i], "pools[" + std::to_string(i) + "]", &pools->emplace_back()));
  }
  return r.Finish();
}

TEST(ConfigTest, ReadsTypedFieldsFromYaml) {
  auto root = ParseYaml(R"(
pools:
- name: llm
  port: 8101
  weight: 2.5
  enabled: false
  endpoints: ["127.0.0.1:1", 127.0.0.1:2]
- {name: 123}
)", "pools.yaml");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  std::vector<Pool> pools;
  ASSERT_TRUE(ReadPools(*root, &pools).ok());
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].name, "llm");
  EXPECT_EQ(pools[0].port, 8101);
  EXPECT_DOUBLE_EQ(pools[0].weight, 2.5);
  EXPECT_FALSE(pools[0].enabled);
  EXPECT_EQ(pools[0].endpoints, (std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"}));
  EXPECT_EQ(pools[1].name, "123");  // an unquoted YAML scalar read as a string
  EXPECT_EQ(pools[1].port, 80);     // default kept
}

TEST(ConfigTest, UnknownKeyNamesFieldAndPosition) {
  auto root = ParseYaml("pools:\n- name: a\n  prot: 80\n", "p.yaml");
  ASSERT_TRUE(root.ok());
  std::vector<Pool> pools;
  Status s = ReadPools(*root, &pools);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("p.yaml:3:9: pools[0].prot: unknown key"), std::string::npos) << s.message();
}

TEST(ConfigTest, WrongTypeAndBadValueNameTheField) {
  std::vector<Pool> pools;
  auto root = ParseYaml("pools:\n- name: a\n  port: [1]\n", "p.yaml");
  Status s = ReadPools(*root, &pools);
  EXPECT_NE(s.message().find("pools[0].port: expected an integer, got a list"), std::string::npos) << s.message();
  EXPECT_EQ(s.param(), "pools[0].port");

  pools.clear();
  root = ParseYaml("pools:\n- name: a\n  port: 70000\n", "p.yaml");
  s = ReadPools(*root, &pools);
  EXPECT_NE(s.message().find("p.yaml:3:9: pools[0].port: must be in [1, 65535]"), std::string::npos) << s.message();

  pools.clear();
  root = ParseYaml("pools:\n- port: 1\n", "p.yaml");
  s = ReadPools(*root, &pools);
  EXPECT_NE(s.message().find("pools[0].name: required field is missing"), std::string::npos) << s.message();
}

TEST(ConfigTest, JsonIsStrictAboutTypes) {
  auto root = ParseJson(R"({"pools":[{"name": 5}]})", "<json>");
  ASSERT_TRUE(root.ok());
  std::vector<Pool> pools;
  Status s = ReadPools(*root, &pools);
  EXPECT_NE(s.message().find("pools[0].name: expected a string, got an integer"), std::string::npos) << s.message();
}

TEST(ConfigTest, SyntaxErrorsCarryPosition) {
  auto y = ParseYaml("a: [1, 2\nb: 3\n", "bad.yaml");
  EXPECT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("bad.yaml:"), std::string::npos);
  auto j = ParseJson("{\"a\": }", "bad.json");
  EXPECT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("bad.json: invalid JSON at byte"), std::string::npos) << j.status().message();
}

TEST(ConfigTest, DuplicateYamlKeyRejected) {
  auto y = ParseYaml("a: 1\na: 2\n", "d.yaml");
  EXPECT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("duplicate key"), std::string::npos);
}

TEST(ConfigTest, AllowUnknownKeysForForeignFormats) {
  auto root = ParseJson(R"({"hidden_size": 64, "torch_dtype": "bfloat16"})", "config.json");
  ObjectReader r(*root, "", ObjectReader::UnknownKeys::kAllow);
  int64_t hidden = 0;
  EXPECT_TRUE(r.GetInt("hidden_size", &hidden, true).ok());
  EXPECT_EQ(hidden, 64);
  EXPECT_TRUE(r.Finish().ok());
}

TEST(ConfigTest, WholeFloatsAreIntegersOnlyInsideInt64) {
  auto root = ParseJson(R"({"a": 4096.0, "b": 9223372036854775808.0, "c": 1e300, "d": 2.5, "e": -9223372036854775808.0})",
                        "config.json");
  ASSERT_TRUE(root.ok());
  ObjectReader r(*root, "", ObjectReader::UnknownKeys::kAllow);
  int64_t v = 0;
  EXPECT_TRUE(r.GetInt("a", &v, true).ok());
  EXPECT_EQ(v, 4096);
  EXPECT_FALSE(r.GetInt("b", &v, true).ok());  // 2^63: one past INT64_MAX
  EXPECT_FALSE(r.GetInt("c", &v, true).ok());
  EXPECT_FALSE(r.GetInt("d", &v, true).ok());
  EXPECT_TRUE(r.GetInt("e", &v, true).ok());
  EXPECT_EQ(v, INT64_MIN);
}

TEST(ConfigTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadConfigFile("/nonexistent/omni.yaml").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace omni
