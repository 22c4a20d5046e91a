// The simulator end to end on cases small enough to check by hand.
#include "services/routing_sim/routing_sim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "services/routing_sim/sim_report.h"

namespace omni::routing_sim {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

SimOptions Options(loadgen::WorkloadOptions workload, int replicas, int concurrency) {
  SimOptions o;
  o.workload = workload;
  o.replicas = replicas;
  o.concurrency = concurrency;
  o.output_len = 1;
  o.replica.kv_blocks = 256;
  return o;
}

PolicyResult Simulate(const SimOptions& o, Policy policy) {
  EXPECT_TRUE(ValidateSimOptions(o).ok()) << ValidateSimOptions(o).ToString();
  auto w = loadgen::GenerateWorkload(o.workload);
  EXPECT_TRUE(w.ok());
  return SimulatePolicy(o, *w, policy);
}

// One system prompt of 159 words and a one-word question: 163 tokens, of
// which the first 10 blocks (the marker and the system prompt) repeat.
SimOptions RepeatedPrompt(int requests) {
  return Options({.kind = loadgen::WorkloadKind::kSharedPrefix, .num_requests = requests, .input_len = 1,
                  .num_prefixes = 1, .prefix_len = 159, .seed = 3},
                 2, 1);
}

TEST(RoutingSim, PrecisePrefixHitsEveryRepeatOnTheReplicaThatHoldsIt) {
  PolicyResult r = Simulate(RepeatedPrompt(20), Policy::kPrecisePrefix);
  EXPECT_EQ(r.requests, 20);
  EXPECT_EQ(r.prompt_tokens, 163 * 20);
  EXPECT_EQ(r.cached_tokens, 160 * 19);  // all but the first
  EXPECT_THAT(r.requests_per_replica, UnorderedElementsAre(20, 0));
}

TEST(RoutingSim, ApproximatePrefixFollowsTheSameHolder) {
  PolicyResult r = Simulate(RepeatedPrompt(20), Policy::kApproxPrefix);
  EXPECT_EQ(r.cached_tokens, 160 * 19);
  EXPECT_THAT(r.requests_per_replica, UnorderedElementsAre(20, 0));
}

TEST(RoutingSim, RoundRobinMissesOncePerReplicaAndSpreadsEvenly) {
  PolicyResult r = Simulate(RepeatedPrompt(20), Policy::kRoundRobin);
  EXPECT_EQ(r.cached_tokens, 160 * 18);
  EXPECT_THAT(r.requests_per_replica, ElementsAre(10, 10));

  SimOptions o = Options({.kind = loadgen::WorkloadKind::kSynthetic, .num_requests = 40, .input_len = 30}, 4, 4);
  EXPECT_THAT(Simulate(o, Policy::kRoundRobin).requests_per_replica, ElementsAre(10, 10, 10, 10));
}

TEST(RoutingSim, OneRequestByHand) {
  SimOptions o = Options({.kind = loadgen::WorkloadKind::kSynthetic, .num_requests = 1, .input_len = 98}, 1, 1);
  o.output_len = 5;
  PolicyResult r = Simulate(o, Policy::kLoadOnly);
  // [user] + 98 words + [assistant] = 100 prompt tokens at 2000 tokens/s,
  // then 4 single-stream decode steps at 60 tokens/s.
  EXPECT_EQ(r.prompt_tokens, 100);
  EXPECT_NEAR(r.ttft_s.p50, 0.05, 1e-9);
  EXPECT_NEAR(r.duration_s, 0.05 + 4.0 / 60, 1e-9);
  EXPECT_NEAR(r.output_tokens_per_s, 5 / (0.05 + 4.0 / 60), 1e-6);
  EXPECT_DOUBLE_EQ(r.load_imbalance, 1.0);
}

TEST(RoutingSim, DeterministicForASeed) {
  SimOptions o = Options({.kind = loadgen::WorkloadKind::kMultiTurn, .num_requests = 300, .input_len = 20,
                          .num_prefixes = 3, .prefix_len = 100, .turns = 3, .seed = 5},
                         4, 12);
  o.output_len = 10;
  o.replica.kv_blocks = 64;
  o.seed = 17;
  for (Policy p : {Policy::kRandom, Policy::kApproxPrefix, Policy::kPrecisePrefix}) {
    PolicyResult a = Simulate(o, p);
    PolicyResult b = Simulate(o, p);
    EXPECT_EQ(a.requests, 300);
    EXPECT_EQ(a.cached_tokens, b.cached_tokens) << PolicyName(p);
    EXPECT_EQ(a.requests_per_replica, b.requests_per_replica) << PolicyName(p);
    EXPECT_EQ(a.duration_s, b.duration_s) << PolicyName(p);
    EXPECT_EQ(a.ttft_s.p90, b.ttft_s.p90) << PolicyName(p);
    EXPECT_EQ(a.load_imbalance, b.load_imbalance) << PolicyName(p);
  }
  SimOptions other = o;
  other.seed = 18;
  EXPECT_NE(Simulate(o, Policy::kRandom).requests_per_replica, Simulate(other, Policy::kRandom).requests_per_replica);
}

TEST(RoutingSim, PrefixAwarePoliciesBeatRoundRobinUnderATightBudget) {
  // 5 system prompts of 150 words (10 blocks each; 5 against 4 replicas so
  // round-robin does not line up with them by chance), replicas that hold
  // about two of them beside their running requests.
  SimOptions o = Options({.kind = loadgen::WorkloadKind::kSharedPrefix, .num_requests = 400, .input_len = 10,
                          .num_prefixes = 5, .prefix_len = 150, .seed = 1},
                         4, 8);
  o.output_len = 8;
  o.replica.kv_blocks = 40;
  const double rr = Simulate(o, Policy::kRoundRobin).hit_rate;
  const double precise = Simulate(o, Policy::kPrecisePrefix).hit_rate;
  const double single = Simulate(o, Policy::kSingleReplica).hit_rate;
  EXPECT_GT(precise, rr);
  EXPECT_GE(single, rr);
}

TEST(RoutingSim, SingleReplicaHoldsTheFleetsBlocks) {
  SimOptions o = Options({.kind = loadgen::WorkloadKind::kSynthetic, .num_requests = 10, .input_len = 20}, 8, 2);
  PolicyResult r = Simulate(o, Policy::kSingleReplica);
  EXPECT_EQ(r.replicas, 1);
  EXPECT_EQ(r.kv_blocks_per_replica, 8 * 256);
  EXPECT_THAT(r.requests_per_replica, ElementsAre(10));
}

TEST(RoutingSim, OpenLoopServesEveryRequest) {
  SimOptions o = Options({.kind = loadgen::WorkloadKind::kMultiTurn, .num_requests = 60, .input_len = 10,
                          .num_prefixes = 2, .prefix_len = 30, .turns = 3},
                         3, 0);
  o.request_rate = 5;
  o.output_len = 4;
  PolicyResult r = Simulate(o, Policy::kPrecisePrefix);
  EXPECT_EQ(r.requests, 60);
  EXPECT_EQ(r.output_tokens, 240);
  EXPECT_GT(r.duration_s, 0);
}

TEST(RoutingSim, ValidationNamesTheFlag) {
  SimOptions o = Options({.kind = loadgen::WorkloadKind::kSynthetic, .num_requests = 10, .input_len = 100}, 2, 1);
  o.replica.kv_blocks = 4;
  Status s = ValidateSimOptions(o);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("--kv-blocks"));
  o.replica.kv_blocks = 64;
  o.request_rate = 1;
  EXPECT_FALSE(ValidateSimOptions(o).ok());  // both loops
  o.concurrency = 0;
  EXPECT_TRUE(ValidateSimOptions(o).ok());
}

TEST(RoutingPolicy, ParsesLists) {
  auto all = ParsePolicies("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 6u);
  auto two = ParsePolicies("precise-prefix, round-robin");
  ASSERT_TRUE(two.ok());
  EXPECT_THAT(*two, ElementsAre(Policy::kPrecisePrefix, Policy::kRoundRobin));
  EXPECT_FALSE(ParsePolicies("precise,round-robin").ok());
  gateway::RoutingProfile approx = PolicyProfile(Policy::kApproxPrefix);
  ASSERT_EQ(approx.scorers.size(), 3u);
  EXPECT_EQ(approx.scorers[0].type, PluginType::kPrefixCacheScorer);
  EXPECT_EQ(approx.scorers[0].weight, 3);
  EXPECT_EQ(approx.picker, PluginType::kMaxScorePicker);
  EXPECT_EQ(PolicyProfile(Policy::kRoundRobin).picker, PluginType::kRoundRobinPicker);
}

TEST(SimReport, TableAndJson) {
  SimOptions o = Options({.kind = loadgen::WorkloadKind::kSharedPrefix, .num_requests = 20, .input_len = 5,
                          .num_prefixes = 2, .prefix_len = 40},
                         2, 2);
  std::vector<PolicyResult> results = {Simulate(o, Policy::kPrecisePrefix), Simulate(o, Policy::kSingleReplica)};
  const std::string table = FormatSimTable(o, results);
  EXPECT_THAT(table, ::testing::HasSubstr("precise-prefix"));
  EXPECT_THAT(table, ::testing::HasSubstr("single-replica"));
  nlohmann::json j = nlohmann::json::parse(SimReportJson(o, results));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["config"]["replicas"], 2);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["policy"], "precise-prefix");
  EXPECT_EQ(j["results"][0]["requests"], 20);
  EXPECT_TRUE(j["results"][0]["ttft_s"]["p90"].is_number());
  EXPECT_TRUE(j["results"][1]["ttft_s"].is_null());
  EXPECT_DOUBLE_EQ(j["results"][1]["hit_rate_vs_single_replica"].get<double>(), 1.0);
}

}  // namespace
}  // namespace omni::routing_sim
