#include "services/loadgen/stats.h"

#include <gtest/gtest.h>

namespace omni::loadgen {
namespace {

TEST(PercentileTest, InterpolatesBetweenClosestRanksLikeNumpy) {
  std::vector<double> v = {1, 2, 3, 4};
  // rank = p/100 * (n-1): p50 -> 1.5, p90 -> 2.7, p99 -> 2.97.
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
  std::vector<double> one = {10};
  EXPECT_DOUBLE_EQ(Percentile(one, 99), 10);
}

TEST(PercentileTest, SummarizeSortsFirst) {
  Distribution d = Summarize(std::vector<double>{5, 1, 4, 2, 3});
  EXPECT_EQ(d.count, 5u);
  EXPECT_DOUBLE_EQ(d.mean, 3);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 5);
  EXPECT_DOUBLE_EQ(d.p50, 3);
  EXPECT_DOUBLE_EQ(d.p90, 4.6);   // rank 3.6
  EXPECT_DOUBLE_EQ(d.p99, 4.96);  // rank 3.96
  Distribution empty = Summarize(std::vector<double>{});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.p99, 0);
}

RequestRecord Ok(double ttft, double e2e, int64_t prompt, int64_t completion, int64_t cached, std::vector<double> itl) {
  RequestRecord r;
  r.ok = true;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.prompt_tokens = prompt;
  r.completion_tokens = completion;
  r.cached_tokens = cached;
  r.cached_tokens_reported = true;
  r.usage_reported = true;
  r.itl_s = std::move(itl);
  return r;
}

TEST(SummaryTest, HandComputedRun) {
  std::vector<RequestRecord> records;
  records.push_back(Ok(0.1, 0.5, 100, 5, 50, {0.1, 0.1, 0.1, 0.1}));
  records.push_back(Ok(0.2, 2.2, 300, 11, 0, {0.2, 0.2}));
  RequestRecord failed;
  failed.error_kind = "http_500";
  records.push_back(failed);
  records.push_back(failed);
  BenchSummary s = Summarize(records, 2.0);
  EXPECT_EQ(s.requests, 4);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.errors.at("http_500"), 2);
  EXPECT_EQ(s.prompt_tokens, 400);
  EXPECT_EQ(s.completion_tokens, 16);
  EXPECT_EQ(s.cached_tokens, 50);
  EXPECT_DOUBLE_EQ(s.prefix_cache_hit_rate, 50.0 / 400.0);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 8.0);
  EXPECT_DOUBLE_EQ(s.total_tokens_per_s, 208.0);
  // Uncached prompt tokens (50 + 300) over summed TTFT (0.3 s).
  EXPECT_NEAR(s.prefill_tokens_per_s, 350.0 / 0.3, 1e-9);
  EXPECT_NEAR(s.ttft_ms.mean, 150, 1e-9);
  EXPECT_NEAR(s.ttft_ms.p90, 190, 1e-9);
  EXPECT_NEAR(s.ttft_ms.p99, 199, 1e-9);
  // TPOT: (0.5 - 0.1) / 4 = 100 ms and (2.2 - 0.2) / 10 = 200 ms.
  EXPECT_NEAR(s.tpot_ms.p50, 150, 1e-9);
  EXPECT_NEAR(s.tpot_ms.min, 100, 1e-9);
  EXPECT_NEAR(s.tpot_ms.max, 200, 1e-9);
  // ITL pools every gap: four of 100 ms and two of 200 ms.
  EXPECT_EQ(s.itl_ms.count, 6u);
  EXPECT_NEAR(s.itl_ms.mean, 800.0 / 6, 1e-9);
  EXPECT_NEAR(s.itl_ms.p50, 100, 1e-9);
  EXPECT_NEAR(s.e2e_ms.max, 2200, 1e-9);
}

TEST(SummaryTest, HitRateIsUnknownWhenTheServerNeverReportsCachedTokens) {
  RequestRecord r = Ok(0.1, 0.2, 10, 2, 0, {0.1});
  r.cached_tokens_reported = false;
  BenchSummary s = Summarize({r}, 1.0);
  EXPECT_EQ(s.prefix_cache_hit_rate, -1);
  // A single-token answer has no TPOT.
  BenchSummary one = Summarize({Ok(0.1, 0.1, 10, 1, 0, {})}, 1.0);
  EXPECT_EQ(one.tpot_ms.count, 0u);
  EXPECT_EQ(one.ttft_ms.count, 1u);
}

}  // namespace
}  // namespace omni::loadgen
