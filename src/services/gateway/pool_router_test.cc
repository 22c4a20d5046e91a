// PoolRouter: the pipeline over endpoint state, without sockets.
#include "services/gateway/pool_router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <numeric>

namespace omni::gateway {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Addresses(int n) {
  std::vector<std::string> a;
  for (int i = 0; i < n; ++i) a.push_back("127.0.0.1:" + std::to_string(9000 + i));
  return a;
}

RoutingProfile Profile(std::vector<WeightedScorer> scorers, PluginType picker = PluginType::kMaxScorePicker) {
  RoutingProfile p;
  p.scorers = std::move(scorers);
  p.picker = picker;
  return p;
}

void ReportIdle(PoolRouter& router) {
  for (int e = 0; e < router.size(); ++e) router.ReportLoad(e, EndpointLoad{.num_blocks = 1000});
}

TEST(PoolRouter, BurstSpreadsBeforeAnyScrape) {
  FakeClock clock;
  PoolRouter router(Addresses(4), Profile({{PluginType::kQueueScorer, "queue-scorer", 1}}), clock, 1);
  ReportIdle(router);
  std::map<int, int> count;
  for (int i = 0; i < 8; ++i) {
    std::string prompt = "distinct prompt " + std::to_string(i);
    ++count[router.Pick({.model = "m", .prompt_text = prompt}).chosen];
  }
  EXPECT_THAT(count, ElementsAre(std::pair(0, 2), std::pair(1, 2), std::pair(2, 2), std::pair(3, 2)));
}

TEST(PoolRouter, SharedPrefixSticksToOneEndpoint) {
  FakeClock clock;
  PoolRouter router(Addresses(4),
                    Profile({{PluginType::kPrefixCacheScorer, "prefix-cache-scorer", 3},
                             {PluginType::kQueueScorer, "queue-scorer", 2},
                             {PluginType::kKvCacheUtilizationScorer, "kv-cache-utilization-scorer", 2}}),
                    clock, 2);
  ReportIdle(router);
  const std::string system(640, 's');  // 10 blocks of 64 characters
  RouteDecision first = router.Pick({.model = "m", .prompt_text = system + "question one"});
  EXPECT_EQ(first.prefix_score, 0.0);
  router.Finish(first.chosen, first.kv_tokens);
  ReportIdle(router);
  RouteDecision second = router.Pick({.model = "m", .prompt_text = system + std::string(64, 'q')});
  EXPECT_EQ(second.chosen, first.chosen);
  EXPECT_NEAR(second.prefix_score, 10.0 / 11.0, 1e-12);
}

// 64-character blocks stand for 16 tokens only at 4 characters per token.
// Here the servers count one prompt token per 2 routed characters, so an
// endpoint's 100 KV blocks (1600 tokens, 3200 characters) hold 50 index
// blocks, not 100.
TEST(PoolRouter, ApproxIndexIsSizedByTheMeasuredCharactersPerToken) {
  FakeClock clock;
  PoolRouter router(Addresses(2), Profile({{PluginType::kPrefixCacheScorer, "prefix-cache-scorer", 1}}), clock, 3);
  for (int e = 0; e < 2; ++e) {
    router.ReportLoad(e, EndpointLoad{.num_blocks = 100, .block_size = 16, .prompt_tokens_total = 500});
  }
  EXPECT_EQ(router.chars_per_token(), 4.0);  // llm-d's assumption until measured
  EXPECT_EQ(router.approx_capacity(0), 100u);

  const std::string prompt(1000, 'p');
  for (int i = 0; i < 10; ++i) router.Pick({.model = "m", .prompt_text = prompt});  // 10k characters
  // 5000 tokens counted (from the first scrapes' 500 on), split over the two
  // endpoints: at the threshold, so the ratio is measured.
  router.ReportLoad(0, EndpointLoad{.num_blocks = 100, .block_size = 16, .prompt_tokens_total = 3000});
  EXPECT_EQ(router.approx_capacity(0), 100u);  // 2500 tokens so far: still assumed
  router.ReportLoad(1, EndpointLoad{.num_blocks = 100, .block_size = 16, .prompt_tokens_total = 3000});
  EXPECT_DOUBLE_EQ(router.chars_per_token(), 2.0);
  EXPECT_EQ(router.approx_capacity(1), 50u);
  router.ReportLoad(0, EndpointLoad{.num_blocks = 100, .block_size = 16, .prompt_tokens_total = 3000});
  EXPECT_EQ(router.approx_capacity(0), 50u);

  // A restarted server counts from zero: no negative delta, the ratio holds.
  router.ReportLoad(0, EndpointLoad{.num_blocks = 100, .block_size = 16, .prompt_tokens_total = 10});
  EXPECT_DOUBLE_EQ(router.chars_per_token(), 2.0);
  // Servers that report no counter leave llm-d's assumption in place.
  PoolRouter silent(Addresses(1), Profile({{PluginType::kPrefixCacheScorer, "prefix-cache-scorer", 1}}), clock, 3);
  silent.ReportLoad(0, EndpointLoad{.num_blocks = 100});
  for (int i = 0; i < 10; ++i) silent.Pick({.model = "m", .prompt_text = prompt});
  silent.ReportLoad(0, EndpointLoad{.num_blocks = 100});
  EXPECT_EQ(silent.approx_capacity(0), 100u);
}

TEST(PoolRouter, RetargetMovesTheRequest) {
  FakeClock clock;
  PoolRouter router(Addresses(2), Profile({{PluginType::kActiveRequestScorer, "active-request-scorer", 1}}),
                    clock, 3);
  ReportIdle(router);
  RouteDecision d = router.Pick({.model = "m"});
  const int first = d.chosen;
  ASSERT_EQ(d.ranked.size(), 2u);
  router.Retarget(d, d.ranked[1]);
  std::vector<EndpointSnapshot> snap = router.Snapshot();
  EXPECT_EQ(snap[first].in_flight, 0);
  EXPECT_EQ(snap[d.chosen].in_flight, 1);
  router.Finish(d.chosen, d.kv_tokens);
  EXPECT_EQ(router.Snapshot()[d.chosen].in_flight, 0);
}

TEST(PoolRouter, KvUsageFollowsPicksAndFinishesBetweenScrapes) {
  FakeClock clock;
  PoolRouter router(Addresses(2),
                    Profile({{PluginType::kKvCacheUtilizationScorer, "kv-cache-utilization-scorer", 1}}), clock, 5);
  // 100 blocks of 16 tokens each; endpoint 0 scraped at 0.6, endpoint 1 at 0.4.
  router.ReportLoad(0, EndpointLoad{.kv_usage = 0.6, .num_blocks = 100, .block_size = 16});
  router.ReportLoad(1, EndpointLoad{.kv_usage = 0.4, .num_blocks = 100, .block_size = 16});
  // A 480-token prompt (0.3 of an endpoint's KV) goes to the emptier one,
  // which then looks 0.7 full until the next scrape.
  std::vector<int32_t> tokens(480, 7);
  RouteDecision a = router.Pick({.model = "m", .token_ids = tokens});
  EXPECT_EQ(a.chosen, 1);
  EXPECT_EQ(a.kv_tokens, 480);
  EXPECT_EQ(router.Snapshot()[1].kv_tokens_since_scrape, 480);
  EXPECT_THAT(router.DebugJson(), ::testing::HasSubstr("\"kv_tokens_since_scrape\":480.000000,"
                                                       "\"effective_kv_cache_usage\":0.700000"));
  // So the next one goes to endpoint 0 (0.6 < 0.7) ...
  RouteDecision b = router.Pick({.model = "m", .token_ids = tokens});
  EXPECT_EQ(b.chosen, 0);
  // ... and once it finishes, endpoint 0 is back at 0.6, below endpoint 1's 0.7.
  router.Finish(b.chosen, b.kv_tokens);
  EXPECT_EQ(router.Snapshot()[0].kv_tokens_since_scrape, 0);
  EXPECT_EQ(router.Pick({.model = "m", .token_ids = tokens}).chosen, 0);
  // A scrape replaces the estimate.
  router.ReportLoad(0, EndpointLoad{.kv_usage = 0.6, .num_blocks = 100, .block_size = 16});
  EXPECT_EQ(router.Snapshot()[0].kv_tokens_since_scrape, 0);
}

TEST(PoolRouter, KvTokensEstimatedFromPromptCharacters) {
  FakeClock clock;
  PoolRouter router(Addresses(1),
                    Profile({{PluginType::kKvCacheUtilizationScorer, "kv-cache-utilization-scorer", 1}}), clock, 6);
  ReportIdle(router);
  // Before calibration: llm-d's 4 characters per token.
  const std::string prompt(640, 'p');
  EXPECT_EQ(router.Pick({.model = "m", .prompt_text = prompt}).kv_tokens, 160);
  EXPECT_EQ(router.Pick({.model = "m"}).kv_tokens, 0);
}

TEST(PoolRouter, UnhealthyAndStaleEndpointsAreAvoided) {
  FakeClock clock;
  PoolRouter router(Addresses(3), Profile({}, PluginType::kRandomPicker), clock, 4);
  ReportIdle(router);
  router.SetHealthy(0, false);
  clock.Advance(std::chrono::milliseconds(300));
  router.ReportLoad(2, EndpointLoad{});  // only 2 is fresh
  for (int i = 0; i < 20; ++i) {
    RouteDecision d = router.Pick({.model = "m"});
    EXPECT_EQ(d.chosen, 2);
    // The filtered-out endpoints stay behind it as last-resort retries.
    EXPECT_EQ(d.ranked.size(), 3u);
    router.Finish(d.chosen, d.kv_tokens);
  }
}

TEST(PoolRouter, RoundRobinCycles) {
  FakeClock clock;
  PoolRouter router(Addresses(3), Profile({}, PluginType::kRoundRobinPicker), clock, 5);
  ReportIdle(router);
  std::vector<int> chosen;
  for (int i = 0; i < 6; ++i) chosen.push_back(router.Pick({.model = "m"}).chosen);
  EXPECT_THAT(chosen, ElementsAre(0, 1, 2, 0, 1, 2));
}

TEST(PoolRouter, SessionAffinity) {
  FakeClock clock;
  PoolRouter router(Addresses(4),
                    Profile({{PluginType::kSessionAffinityScorer, "session-affinity-scorer", 10},
                             {PluginType::kActiveRequestScorer, "active-request-scorer", 1}}),
                    clock, 6);
  ReportIdle(router);
  const int a = router.Pick({.model = "m", .session_id = "alice"}).chosen;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(router.Pick({.model = "m", .session_id = "alice"}).chosen, a);
  EXPECT_NE(router.Pick({.model = "m", .session_id = "bob"}).chosen, a);
}

TEST(PoolRouter, PreciseScorerFollowsKvEvents) {
  FakeClock clock;
  RoutingProfile profile = Profile({{PluginType::kPrecisePrefixCacheScorer, "precise-prefix-cache-scorer", 1}});
  profile.precise_block_size = 4;
  PoolRouter router(Addresses(3), profile, clock, 7);
  ReportIdle(router);
  std::vector<int32_t> tokens(12);
  std::iota(tokens.begin(), tokens.end(), 50);
  WireBlockStored stored;
  stored.block_hashes = {{.key = 1}, {.key = 2}, {.key = 3}};
  stored.token_ids = tokens;
  stored.block_size = 4;
  KvEventBatch batch;
  batch.events.push_back(stored);
  router.ApplyKvEvents(2, batch);
  for (int i = 0; i < 5; ++i) {
    RouteDecision d = router.Pick({.model = "m", .token_ids = tokens});
    EXPECT_EQ(d.chosen, 2);
    EXPECT_EQ(d.prefix_score, 1.0);
  }
  // A restart (marked unhealthy) forgets what the endpoint held (and what
  // the picks above left pending on it).
  router.SetHealthy(2, false);
  router.SetHealthy(2, true);
  ReportIdle(router);
  EXPECT_EQ(router.Pick({.model = "m", .token_ids = tokens}).prefix_score, 0.0);
}

// Before any KV event, requests sharing a new prefix follow the first one
// (its blocks are pending on the endpoint it went to) instead of spreading
// by load; once the pending deadline passes without events they spread.
TEST(PoolRouter, PreciseBurstFollowsTheFirstPickUntilEventsAreDue) {
  FakeClock clock;
  RoutingProfile profile = Profile({{PluginType::kPrecisePrefixCacheScorer, "precise-prefix-cache-scorer", 3},
                                    {PluginType::kQueueScorer, "queue-scorer", 2}});
  profile.precise_block_size = 4;
  PoolRouter router(Addresses(4), profile, clock, 3);
  ReportIdle(router);
  std::vector<int32_t> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 7);
  const int first = router.Pick({.model = "m", .token_ids = tokens}).chosen;
  for (int i = 0; i < 3; ++i) {
    RouteDecision d = router.Pick({.model = "m", .token_ids = tokens});
    EXPECT_EQ(d.chosen, first);
    EXPECT_EQ(d.prefix_score, 1.0);
  }
  for (int i = 0; i < 4; ++i) router.Finish(first, static_cast<double>(tokens.size()));
  clock.Advance(profile.precise_pending_ttl);
  ReportIdle(router);
  EXPECT_EQ(router.Pick({.model = "m", .token_ids = tokens}).prefix_score, 0.0);
}

}  // namespace
}  // namespace omni::gateway
