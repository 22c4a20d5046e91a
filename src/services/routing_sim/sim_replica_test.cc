// SimReplica: the service-time model and the scheduler, checked by hand.
#include "services/routing_sim/sim_replica.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "core/clock.h"
#include "services/gateway/pool_router.h"

namespace omni::routing_sim {
namespace {

SimRequest Request(int64_t id, int prompt_len, int output_len, int32_t first_token = 0) {
  SimRequest r{.id = id, .prompt_len = prompt_len, .output_len = output_len};
  r.tokens.resize(prompt_len + output_len);
  std::iota(r.tokens.begin(), r.tokens.end(), first_token);
  return r;
}

struct Timeline {
  double first_token_s = -1;
  int cached_tokens = -1;
  double finish_s = -1;
  std::vector<double> steps;
};

// Runs steps until `id` finishes; times from 0.
Timeline RunUntilFinished(SimReplica& replica, int64_t id) {
  Timeline t;
  double now = 0;
  while (t.finish_s < 0) {
    std::optional<double> s = replica.StartStep();
    if (!s) break;
    now += *s;
    t.steps.push_back(*s);
    StepOutcome out = replica.FinishStep();
    for (const auto& f : out.first_tokens) {
      if (f.id == id) {
        t.first_token_s = now;
        t.cached_tokens = f.cached_tokens;
      }
    }
    for (int64_t f : out.finished) {
      if (f == id) t.finish_s = now;
    }
  }
  return t;
}

TEST(ServiceTimeModel, DefaultsMatchTheMeasuredRates) {
  ServiceTimeModel m;
  EXPECT_DOUBLE_EQ(m.StepSeconds(2000, 0), 1.0);
  EXPECT_DOUBLE_EQ(m.StepSeconds(0, 1), 1.0 / 60);
  // 16 streams: three times one stream's tokens per second.
  EXPECT_NEAR(16 / m.StepSeconds(0, 16), 3 * 60.0, 1e-9);
  ServiceTimeModel o{.step_overhead_s = 0.002};
  EXPECT_DOUBLE_EQ(o.StepSeconds(100, 2), 0.002 + 0.05 + (1.0 / 60) * (1 + 13.0 / 45));
}

TEST(SimReplica, OneRequestByHand) {
  SimReplica replica(ReplicaOptions{.kv_blocks = 64});
  replica.Enqueue(Request(7, 100, 5));
  Timeline t = RunUntilFinished(replica, 7);
  // One prefill step of 100 tokens samples the first token, then 4 decode steps.
  EXPECT_DOUBLE_EQ(t.first_token_s, 100 / 2000.0);
  EXPECT_EQ(t.cached_tokens, 0);
  ASSERT_EQ(t.steps.size(), 5u);
  EXPECT_NEAR(t.finish_s, 0.05 + 4.0 / 60, 1e-12);
  EXPECT_EQ(replica.running(), 0);
  // 100 + 5 - 1 = 104 tokens of KV: 6 full blocks cached, none in use.
  EXPECT_EQ(replica.cache().cached_blocks(), 6);
  EXPECT_EQ(replica.cache().used_blocks(), 0);
}

TEST(SimReplica, ChunkedPrefillUsesTheTokenBudget) {
  SimReplica replica(ReplicaOptions{.kv_blocks = 400});
  replica.Enqueue(Request(1, 5000, 2));
  Timeline t = RunUntilFinished(replica, 1);
  ASSERT_EQ(t.steps.size(), 4u);
  EXPECT_DOUBLE_EQ(t.steps[0], 2048 / 2000.0);
  EXPECT_DOUBLE_EQ(t.steps[1], 2048 / 2000.0);
  EXPECT_DOUBLE_EQ(t.steps[2], 904 / 2000.0);
  EXPECT_DOUBLE_EQ(t.first_token_s, 5000 / 2000.0);
  EXPECT_DOUBLE_EQ(t.steps[3], 1.0 / 60);
}

TEST(SimReplica, ARepeatedPromptSkipsItsCachedBlocks) {
  SimReplica replica(ReplicaOptions{.kv_blocks = 64});
  replica.Enqueue(Request(1, 100, 3));
  RunUntilFinished(replica, 1);
  replica.Enqueue(Request(2, 100, 3));
  Timeline t = RunUntilFinished(replica, 2);
  // (100 - 1) / 16 = 6 blocks: the last prompt token is always computed.
  EXPECT_EQ(t.cached_tokens, 96);
  EXPECT_DOUBLE_EQ(t.first_token_s, 4 / 2000.0);
  // A prompt that only shares the first 40 tokens hits the first 2 blocks.
  SimRequest other = Request(3, 100, 3);
  std::iota(other.tokens.begin() + 40, other.tokens.end(), 1000);
  replica.Enqueue(std::move(other));
  EXPECT_EQ(RunUntilFinished(replica, 3).cached_tokens, 32);
}

TEST(SimReplica, DecodeAndPrefillShareAStep) {
  SimReplica replica(ReplicaOptions{.kv_blocks = 64});
  replica.Enqueue(Request(1, 100, 10));
  ASSERT_TRUE(replica.StartStep());
  replica.FinishStep();
  replica.Enqueue(Request(2, 200, 10, 5000));
  std::optional<double> s = replica.StartStep();
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(*s, 200 / 2000.0 + 1.0 / 60);
  StepOutcome out = replica.FinishStep();
  ASSERT_EQ(out.first_tokens.size(), 1u);
  EXPECT_EQ(out.first_tokens[0].id, 2);
  s = replica.StartStep();
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(*s, (1.0 / 60) * (1 + 13.0 / 45));  // decode batch 2
}

TEST(SimReplica, AdmissionWaitsForBlocks) {
  // Each request reserves (64 + 17 - 1) / 16 = 5 blocks; 8 blocks fit one.
  SimReplica replica(ReplicaOptions{.kv_blocks = 8});
  replica.Enqueue(Request(1, 64, 17));
  replica.Enqueue(Request(2, 64, 17, 1000));
  ASSERT_TRUE(replica.StartStep());
  EXPECT_EQ(replica.running(), 1);
  EXPECT_EQ(replica.waiting(), 1);
  EXPECT_DOUBLE_EQ(replica.kv_usage(), 5.0 / 8);
  replica.FinishStep();
  Timeline t = RunUntilFinished(replica, 2);
  // After request 1's prefill step: its 16 decode steps, then request 2's prefill.
  EXPECT_NEAR(t.first_token_s, 16.0 / 60 + 64 / 2000.0, 1e-12);
}

TEST(SimReplica, MaxNumSeqsBoundsTheBatch) {
  SimReplica replica(ReplicaOptions{.kv_blocks = 64, .max_num_seqs = 2});
  for (int i = 0; i < 3; ++i) replica.Enqueue(Request(i, 16, 4, 100 * i));
  ASSERT_TRUE(replica.StartStep());
  EXPECT_EQ(replica.running(), 2);
  EXPECT_EQ(replica.waiting(), 1);
}

TEST(SimReplica, BlocksForCountsThePromptAndAllButTheLastToken) {
  EXPECT_EQ(SimReplica::BlocksFor(16, 1), 1);
  EXPECT_EQ(SimReplica::BlocksFor(16, 2), 2);
  EXPECT_EQ(SimReplica::BlocksFor(1, 1), 1);
  EXPECT_EQ(SimReplica::BlocksFor(100, 5), 7);
}

// The router's precise index, fed only the replica's KV events, holds what
// the replica's cache holds, evictions included, and scores by it.
TEST(SimReplica, KvEventsKeepThePreciseIndexInStep) {
  FakeClock clock;
  gateway::RoutingProfile profile;
  profile.scorers = {{PluginType::kPrecisePrefixCacheScorer, "precise-prefix-cache-scorer", 1}};
  gateway::PoolRouter router({"replica-0"}, profile, clock, 1);
  SimReplica replica(ReplicaOptions{.kv_blocks = 20});
  auto flush = [&] {
    KvEventBatch batch;
    batch.events = replica.TakeKvEvents();
    router.ApplyKvEvents(0, batch);
  };
  for (int i = 0; i < 6; ++i) {  // 8 blocks each: later ones evict earlier ones
    replica.Enqueue(Request(i, 120, 9, 1000 * i));
    while (replica.StartStep()) {
      flush();
      replica.FinishStep();
      flush();
    }
  }
  nlohmann::json debug = nlohmann::json::parse(router.DebugJson());
  EXPECT_EQ(debug["endpoints"][0]["precise_index_blocks"].get<int>(), replica.cache().cached_blocks());
  EXPECT_EQ(replica.cache().cached_blocks(), 20);

  std::vector<int32_t> last(120);
  std::iota(last.begin(), last.end(), 5000);
  router.ReportLoad(0, gateway::EndpointLoad{.num_blocks = 20});
  EXPECT_DOUBLE_EQ(router.Pick({.model = "m", .token_ids = last}).prefix_score, 1.0);
  std::vector<int32_t> first(120);
  std::iota(first.begin(), first.end(), 0);
  EXPECT_DOUBLE_EQ(router.Pick({.model = "m", .token_ids = first}).prefix_score, 0.0);
}

}  // namespace
}  // namespace omni::routing_sim
