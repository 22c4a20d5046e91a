// Filters and scorers against spec/routing.md's formulas, with hand-computed
// expected values.
#include "services/gateway/scorers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace omni::gateway {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;

EndpointSnapshot Loaded(double waiting, double kv, int in_flight = 0) {
  EndpointSnapshot e;
  e.has_metrics = true;
  e.waiting = waiting;
  e.kv_usage = kv;
  e.in_flight = in_flight;
  return e;
}

TEST(QueueScorer, MinMaxNormalisedOverCandidates) {
  std::vector<EndpointSnapshot> eps = {Loaded(2, 0), Loaded(10, 0), Loaded(6, 0), Loaded(100, 0)};
  // Only the first three are candidates: maxQ 10, minQ 2.
  std::vector<int> cand = {0, 1, 2};
  EXPECT_THAT(QueueScores(eps, cand), ElementsAre(1.0, 0.0, 0.5));
}

TEST(QueueScorer, AllEqualScoreOne) {
  std::vector<EndpointSnapshot> eps = {Loaded(3, 0), Loaded(3, 0)};
  std::vector<int> cand = {0, 1};
  EXPECT_THAT(QueueScores(eps, cand), ElementsAre(1.0, 1.0));
}

TEST(QueueScorer, PicksSinceScrapeCountAsQueued) {
  std::vector<EndpointSnapshot> eps = {Loaded(0, 0), Loaded(0, 0)};
  eps[0].picks_since_scrape = 4;
  std::vector<int> cand = {0, 1};
  EXPECT_THAT(QueueScores(eps, cand), ElementsAre(0.0, 1.0));
}

TEST(KvCacheUtilizationScorer, OneMinusUsage) {
  std::vector<EndpointSnapshot> eps = {Loaded(0, 0.25), Loaded(0, 1.0), Loaded(0, 0)};
  std::vector<int> cand = {0, 1, 2};
  EXPECT_THAT(KvCacheUtilizationScores(eps, cand), ElementsAre(0.75, 0.0, 1.0));
}

TEST(KvCacheUtilizationScorer, PicksAndFinishesSinceScrapeMoveTheUsage) {
  // 100 blocks of 16 tokens = 1600 tokens of KV on each endpoint.
  std::vector<EndpointSnapshot> eps = {Loaded(0, 0.25), Loaded(0, 0.5), Loaded(0, 0.5), Loaded(0, 0.5)};
  for (EndpointSnapshot& e : eps) e.num_blocks = 100;
  eps[0].kv_tokens_since_scrape = 400;    // 0.25 + 400 / 1600
  eps[1].kv_tokens_since_scrape = -400;   // a 400-token request finished: 0.5 - 0.25
  eps[2].kv_tokens_since_scrape = -1600;  // clamped at 0
  eps[3].kv_tokens_since_scrape = 1600;   // clamped at 1
  EXPECT_DOUBLE_EQ(EffectiveKvUsage(eps[0]), 0.5);
  EXPECT_DOUBLE_EQ(EffectiveKvUsage(eps[1]), 0.25);
  std::vector<int> cand = {0, 1, 2, 3};
  EXPECT_THAT(KvCacheUtilizationScores(eps, cand), ElementsAre(0.5, 0.75, 1.0, 0.0));
  // Without a known capacity the scraped usage stands.
  EndpointSnapshot unknown = Loaded(0, 0.3);
  unknown.num_blocks = 0;
  unknown.kv_tokens_since_scrape = 1000;
  EXPECT_DOUBLE_EQ(EffectiveKvUsage(unknown), 0.3);
}

TEST(SaturationFilter, CountsKvPickedSinceScrape) {
  // Both scraped at 0.7; 240 of 1600 tokens picked since onto the first
  // make it 0.85, over the 0.8 limit.
  std::vector<EndpointSnapshot> eps = {Loaded(0, 0.7), Loaded(0, 0.7)};
  for (EndpointSnapshot& e : eps) e.num_blocks = 100;
  eps[0].kv_tokens_since_scrape = 240;
  std::vector<int> cand = {0, 1};
  EXPECT_THAT(FilterUnsaturated(eps, cand, SaturationLimits{}), ElementsAre(1));
}

TEST(ActiveRequestScorer, RelativeToBusiest) {
  std::vector<EndpointSnapshot> eps = {Loaded(0, 0, 4), Loaded(0, 0, 1), Loaded(0, 0, 0)};
  std::vector<int> cand = {0, 1, 2};
  EXPECT_THAT(ActiveRequestScores(eps, cand), ElementsAre(0.0, 0.75, 1.0));
  std::vector<EndpointSnapshot> idle = {Loaded(0, 0), Loaded(0, 0)};
  std::vector<int> two = {0, 1};
  EXPECT_THAT(ActiveRequestScores(idle, two), ElementsAre(1.0, 1.0));
}

TEST(PrefixScorer, MatchedOverTotalBlocks) {
  std::vector<int> matched = {0, 3, 4};
  EXPECT_THAT(PrefixScores(matched, 4), ElementsAre(0.0, 0.75, 1.0));
  EXPECT_THAT(PrefixScores(matched, 0), ElementsAre(0.0, 0.0, 0.0));
}

TEST(SessionAffinityScorer, OneForTheSessionsEndpoint) {
  std::vector<int> cand = {0, 2, 3};
  EXPECT_THAT(SessionAffinityScores(cand, 2), ElementsAre(0.0, 1.0, 0.0));
  EXPECT_THAT(SessionAffinityScores(cand, -1), ElementsAre(0.0, 0.0, 0.0));
}

TEST(Filters, HealthDropsUnhealthyAndFailsOpen) {
  std::vector<EndpointSnapshot> eps = {Loaded(0, 0), Loaded(0, 0), Loaded(0, 0)};
  eps[1].healthy = false;
  std::vector<int> cand = {0, 1, 2};
  EXPECT_THAT(FilterHealthy(eps, cand), ElementsAre(0, 2));
  for (auto& e : eps) e.healthy = false;
  EXPECT_THAT(FilterHealthy(eps, cand), ElementsAre(0, 1, 2));
}

TEST(Filters, SaturationByQueueKvUsageAndStaleness) {
  SaturationLimits limits{.queue_depth = 5, .kv_cache_usage = 0.8, .metrics_staleness_ms = 200};
  std::vector<EndpointSnapshot> eps = {Loaded(1, 0.5), Loaded(6, 0.1), Loaded(0, 0.81), Loaded(0, 0),
                                       Loaded(0, 0), Loaded(5, 0.8)};
  eps[3].metrics_age_ms = 250;  // stale
  eps[4].has_metrics = false;   // never scraped
  std::vector<int> cand = {0, 1, 2, 3, 4, 5};
  EXPECT_THAT(FilterUnsaturated(eps, cand, limits), ElementsAre(0, 5));
  // Every endpoint saturated: keep them all.
  std::vector<int> bad = {1, 2, 3};
  EXPECT_THAT(FilterUnsaturated(eps, bad, limits), ElementsAre(1, 2, 3));
}

}  // namespace
}  // namespace omni::gateway
