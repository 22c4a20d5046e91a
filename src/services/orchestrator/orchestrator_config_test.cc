#include "services/orchestrator/orchestrator_config.h"

#include <gtest/gtest.h>

namespace omni::orchestrator {
namespace {

StatusOr<OrchestratorConfig> Parse(std::string_view yaml) {
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, ParseYaml(yaml, "o.yaml"));
  return ParseOrchestratorConfig(root);
}

TEST(OrchestratorConfig, ReadsEveryField) {
  auto c = Parse(
      "gateway: http://127.0.0.1:8001\n"
      "store: file:///tmp/objects\n"
      "timeouts: {connect_ms: 100, llm_s: 30, models_ms: 200, probe_ms: 300}\n"
      "health:\n"
      "  interval_ms: 250\n"
      "  components:\n"
      "  - {name: llm-0, url: 'http://127.0.0.1:9001'}\n"
      "  - {name: llm-1, url: 'http://[::1]:9002'}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->gateway, "http://127.0.0.1:8001");
  EXPECT_EQ(c->store, "file:///tmp/objects");
  EXPECT_EQ(c->timeouts.connect, std::chrono::milliseconds(100));
  EXPECT_EQ(c->timeouts.llm, std::chrono::seconds(30));
  EXPECT_EQ(c->timeouts.models, std::chrono::milliseconds(200));
  EXPECT_EQ(c->timeouts.probe, std::chrono::milliseconds(300));
  EXPECT_EQ(c->probe_interval, std::chrono::milliseconds(250));
  ASSERT_EQ(c->components.size(), 2u);
  EXPECT_EQ(c->components[1].name, "llm-1");
  EXPECT_EQ(c->components[1].url, "http://[::1]:9002");
}

TEST(OrchestratorConfig, ReadsTheImagesSection) {
  auto c = Parse(
      "gateway: http://127.0.0.1:8001\n"
      "store: file:///tmp/objects\n"
      "images: {vision_decoder: vd, llm_model: omni, decode_s: 20, url_ttl_s: 60, public_url: 'http://h:80',"
      " max_concurrent: 3}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->images.vision_decoder, "vd");
  EXPECT_EQ(c->images.llm_model, "omni");
  EXPECT_EQ(c->images.decode_timeout, std::chrono::seconds(20));
  EXPECT_EQ(c->images.url_ttl, std::chrono::seconds(60));
  EXPECT_EQ(c->images.public_url, "http://h:80");
  EXPECT_EQ(c->images.max_concurrent, 3);
  auto defaults = Parse("gateway: http://127.0.0.1:8001\n");
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->images.vision_decoder.empty());  // no image generation
  EXPECT_EQ(defaults->images.url_ttl, std::chrono::hours(1));
}

TEST(OrchestratorConfig, OnlyTheGatewayIsRequired) {
  auto c = Parse("gateway: http://127.0.0.1:8001\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->store.empty());
  EXPECT_EQ(c->timeouts.llm, std::chrono::seconds(600));
  EXPECT_TRUE(c->components.empty());
}

TEST(OrchestratorConfig, ErrorsNameTheFieldAndItsPosition) {
  struct Case {
    std::string yaml;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"store: file:///x\n", "gateway: required field is missing"},
           {"gateway: 127.0.0.1:8001\n", "o.yaml:1:10: gateway"},
           {"gateway: http://127.0.0.1:8001/v1\n", "without a path"},
           {"gateway: http://127.0.0.1:8001\nstore: /tmp/x\n", "store: expected a file:// or s3:// URI"},
           {"gateway: http://127.0.0.1:8001\ntimeouts: {llm_s: 0}\n", "timeouts.llm_s: must be in [1, 86400]"},
           {"gateway: http://127.0.0.1:8001\ntimeouts: {llm: 5}\n", "timeouts.llm"},
           {"gateway: http://127.0.0.1:8001\nhealth: {components: [{name: gateway, url: 'http://a:1'}]}\n",
            "health.components[0].name"},
           {"gateway: http://127.0.0.1:8001\nhealth: {components: [{name: a, url: 'http://a:1'}, {name: a, url: "
            "'http://a:2'}]}\n",
            "is listed twice"},
           {"gateway: http://127.0.0.1:8001\nhealth: {components: [{name: a}]}\n",
            "health.components[0].url: required field is missing"},
           {"gateway: http://127.0.0.1:8001\ngatway: x\n", "gatway"},
           {"gateway: http://127.0.0.1:8001\nimages: {vision_decoder: vd}\n", "images.vision_decoder needs a store"},
           {"gateway: http://127.0.0.1:8001\nimages: {url_ttl_s: 700000}\n", "images.url_ttl_s: must be in [1, 604800]"},
           {"gateway: http://127.0.0.1:8001\nimages: {public_url: 'http://h/x'}\n", "images.public_url"},
           {"gateway: http://127.0.0.1:8001\nimages: {max_concurrent: 0}\n", "images.max_concurrent"},
       }) {
    auto parsed = Parse(c.yaml);
    ASSERT_FALSE(parsed.ok()) << c.yaml;
    EXPECT_NE(parsed.status().message().find(c.expected), std::string::npos)
        << c.yaml << " -> " << parsed.status().message();
  }
}

}  // namespace
}  // namespace omni::orchestrator
