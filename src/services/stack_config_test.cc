#include "services/stack_config.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

StatusOr<StackConfig> Parse(std::string_view yaml) {
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, ParseYaml(yaml, "stack.yaml"));
  return ParseStackConfig(root);
}

TEST(StackConfig, ReadsEveryField) {
  auto c = Parse(
      "store: s3://omni/objects?endpoint=http://127.0.0.1:9000\n"
      "llm:\n"
      "  model: /models/seed/llm\n"
      "  served_model_name: seed\n"
      "  replicas: 3\n"
      "  threads: 4\n"
      "  args: [--kv-cache-memory, '8589934592']\n"
      "vision_decoder: {model: /models/seed/vd, served_model_name: seed-vd, threads: 2, args: [--sp, '2']}\n"
      "gateway: {args: [--request-timeout-s, '900']}\n"
      "orchestrator: {timeouts: {llm_s: 900, probe_ms: 500}, args: [--io-threads, '4']}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->store, "s3://omni/objects?endpoint=http://127.0.0.1:9000");
  EXPECT_EQ(c->llm.model, "/models/seed/llm");
  EXPECT_EQ(c->llm.served_model_name, "seed");
  EXPECT_EQ(c->llm.replicas, 3);
  EXPECT_EQ(c->llm.threads, 4);
  EXPECT_EQ(c->llm.args, (std::vector<std::string>{"--kv-cache-memory", "8589934592"}));
  EXPECT_EQ(c->vision_decoder.model, "/models/seed/vd");
  EXPECT_EQ(c->vision_decoder.served_model_name, "seed-vd");
  EXPECT_EQ(c->vision_decoder.threads, 2);
  EXPECT_EQ(c->vision_decoder.args, (std::vector<std::string>{"--sp", "2"}));
  EXPECT_EQ(c->gateway_args, (std::vector<std::string>{"--request-timeout-s", "900"}));
  EXPECT_EQ(c->orchestrator_timeouts.llm, std::chrono::seconds(900));
  EXPECT_EQ(c->orchestrator_timeouts.probe, std::chrono::milliseconds(500));
  EXPECT_EQ(c->orchestrator_timeouts.connect, std::chrono::milliseconds(2000));  // the default
  EXPECT_EQ(c->orchestrator_args, (std::vector<std::string>{"--io-threads", "4"}));
}

TEST(StackConfig, AnEmptyMapIsTheDemoStack) {
  auto c = Parse("{}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->store.empty());
  EXPECT_TRUE(c->llm.model.empty());
  EXPECT_FALSE(c->llm.replicas.has_value());
}

TEST(StackConfig, ErrorsNameTheField) {
  struct Case {
    std::string yaml;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"store: /tmp/x\n", "store: expected a file:// or s3:// URI"},
           {"llm: {replicas: 0}\n", "llm.replicas: must be in [1, 64]"},
           {"llm: {args: [--port, '1']}\n", "llm.args: --port is set by up itself"},
           {"llm: {args: ['--model=/x']}\n", "llm.args: --model is set by up itself"},
           {"gateway: {args: [--config, x]}\n", "gateway.args: --config is set by up itself"},
           {"orchestrator: {timeouts: {llm_s: -1}}\n", "orchestrator.timeouts.llm_s"},
           {"llm: {modle: /x}\n", "modle"},
           {"encoder: {}\n", "encoder"},
           {"vision_decoder: {args: [--rank, '1']}\n", "vision_decoder.args: --rank is set by up itself"},
       }) {
    auto parsed = Parse(c.yaml);
    ASSERT_FALSE(parsed.ok()) << c.yaml;
    EXPECT_NE(parsed.status().message().find(c.expected), std::string::npos)
        << c.yaml << " -> " << parsed.status().message();
  }
  // A flag that merely starts like one up sets is the role's own.
  EXPECT_TRUE(Parse("llm: {args: [--portable]}\n").ok());
}

}  // namespace
}  // namespace omni
