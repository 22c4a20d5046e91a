#include "services/gateway/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "net/metrics.h"

namespace omni {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

std::vector<PromSample> MustParse(std::string_view text) {
  StatusOr<std::vector<PromSample>> samples = ParsePrometheusText(text);
  EXPECT_TRUE(samples.ok()) << samples.status().ToString();
  return samples.ok() ? *samples : std::vector<PromSample>{};
}

std::string ParseError(std::string_view text) {
  StatusOr<std::vector<PromSample>> samples = ParsePrometheusText(text);
  EXPECT_FALSE(samples.ok()) << "accepted: " << text;
  if (samples.ok()) return "";
  EXPECT_EQ(samples.status().code(), StatusCode::kInvalidArgument);
  return samples.status().message();
}

TEST(PrometheusTextTest, ParsesNameLabelsValueAndTimestamp) {
  auto s = MustParse("http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "http_requests_total");
  EXPECT_EQ(s[0].labels, (Labels{{"method", "post"}, {"code", "200"}}));
  EXPECT_EQ(s[0].value, 1027);
  EXPECT_EQ(s[0].timestamp_ms, 1395066363000);
  ASSERT_NE(s[0].Label("code"), nullptr);
  EXPECT_EQ(*s[0].Label("code"), "200");
  EXPECT_EQ(s[0].Label("path"), nullptr);
}

TEST(PrometheusTextTest, SkipsCommentsBlankLinesAndCarriageReturns) {
  auto s = MustParse(
      "# HELP vllm:num_requests_waiting Number of requests waiting.\r\n"
      "# TYPE vllm:num_requests_waiting gauge\r\n"
      "\r\n"
      "   # an indented comment with {braces} and \"quotes\n"
      "\t\n"
      "vllm:num_requests_waiting 4\r\n"
      "# EOF");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "vllm:num_requests_waiting");
  EXPECT_TRUE(s[0].labels.empty());
  EXPECT_EQ(s[0].value, 4);
  EXPECT_FALSE(s[0].timestamp_ms.has_value());
}

TEST(PrometheusTextTest, LastLineWithoutNewline) {
  auto s = MustParse("a 1\nb 2");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].name, "b");
  EXPECT_EQ(s[1].value, 2);
}

TEST(PrometheusTextTest, UnescapesLabelValues) {
  auto s = MustParse(R"(msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9)"
                     "\n");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].labels, (Labels{{"path", "C:\\DIR\\FILE.TXT"}, {"error", "Cannot find file:\n\"FILE.TXT\""}}));
  EXPECT_EQ(s[0].value, 1458255915);
}

TEST(PrometheusTextTest, LabelSetSpacingTrailingCommaAndEmptySet) {
  auto s = MustParse(
      "a{ x = \"1\" , y=\"\" , } 5\n"
      "b{} 6\n"
      "c{z=\"{},= \"}\t7\t-12\n"
      "  d 8  \n");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].labels, (Labels{{"x", "1"}, {"y", ""}}));
  EXPECT_EQ(s[0].value, 5);
  EXPECT_TRUE(s[1].labels.empty());
  EXPECT_EQ(s[1].value, 6);
  EXPECT_EQ(s[2].labels, (Labels{{"z", "{},= "}}));
  EXPECT_EQ(s[2].value, 7);
  EXPECT_EQ(s[2].timestamp_ms, -12);
  EXPECT_EQ(s[3].name, "d");
  EXPECT_EQ(s[3].value, 8);
}

TEST(PrometheusTextTest, ParsesSpecialAndExponentValues) {
  auto s = MustParse(
      "a NaN\n"
      "b +Inf\n"
      "c -Inf\n"
      "d Inf\n"
      "e 1e3\n"
      "f -1.5E-3\n"
      "g +2.5e+2\n"
      "h 0.0025\n"
      "i .5\n"
      "j -0\n"
      "k nan\n"
      "l -infinity\n"
      "m 1.7976931348623157e308\n");
  ASSERT_EQ(s.size(), 13u);
  EXPECT_TRUE(std::isnan(s[0].value));
  EXPECT_EQ(s[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s[2].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(s[3].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s[4].value, 1000);
  EXPECT_EQ(s[5].value, -0.0015);
  EXPECT_EQ(s[6].value, 250);
  EXPECT_EQ(s[7].value, 0.0025);
  EXPECT_EQ(s[8].value, 0.5);
  EXPECT_EQ(s[9].value, 0);
  EXPECT_TRUE(std::signbit(s[9].value));
  EXPECT_TRUE(std::isnan(s[10].value));
  EXPECT_EQ(s[11].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(s[12].value, std::numeric_limits<double>::max());
}

TEST(PrometheusTextTest, ErrorsNameTheLine) {
  EXPECT_EQ(ParseError("ok 1\n# c\nbad\n"), "line 3: missing value");
  EXPECT_EQ(ParseError("a abc\n"), "line 1: bad value \"abc\"");
  EXPECT_EQ(ParseError("a 1\n\nb{x=\"1\n"), "line 3: unterminated label value");
  EXPECT_EQ(ParseError("a{x=\"\\t\"} 1\n"), "line 1: invalid escape in label value (only \\\\, \\\" and \\n)");
  EXPECT_EQ(ParseError("a{x=\"1\",x=\"2\"} 1\n"), "line 1: duplicate label \"x\"");
  EXPECT_EQ(ParseError("a 1 2 3\n"), "line 1: unexpected text after the timestamp");
  EXPECT_EQ(ParseError("a 1 1.5\n"), "line 1: bad timestamp \"1.5\"");
  EXPECT_EQ(ParseError("a 1 +5\n"), "line 1: bad timestamp \"+5\"");
  EXPECT_EQ(ParseError("9a 1\n"), "line 1: expected a metric name");
  EXPECT_EQ(ParseError("{x=\"1\"} 1\n"), "line 1: expected a metric name");
  EXPECT_EQ(ParseError("a{x:y=\"1\"} 1\n"), "line 1: expected '=' after label name \"x\"");
  EXPECT_EQ(ParseError("a{x=1} 1\n"), "line 1: expected '\"' to open the value of label \"x\"");
  EXPECT_EQ(ParseError("a{x=\"1\" y=\"2\"} 1\n"), "line 1: expected ',' or '}' after a label value");
  EXPECT_EQ(ParseError("a{,} 1\n"), "line 1: expected a label name or '}'");
  EXPECT_EQ(ParseError("a{x=\"1\"}1\n"), "line 1: expected a blank after the metric name or labels");
  EXPECT_EQ(ParseError("a-b 1\n"), "line 1: expected a blank after the metric name or labels");
  EXPECT_EQ(ParseError("a{x=\"1\"\n"), "line 1: expected ',' or '}' after a label value");
}

TEST(PrometheusTextTest, RejectsValuesGoWouldReject) {
  for (const char* v : {"nan(1)", "-NaN", "+-1", "--1", "0x10", "1e400", "1e", "1_000", "", "Infx", "1.0f"}) {
    std::string line = std::string("a ") + v + "\n";
    StatusOr<std::vector<PromSample>> s = ParsePrometheusText(line);
    EXPECT_FALSE(s.ok()) << "accepted value '" << v << "'";
  }
}

// The page our LLM server serves: the families and label names of
// services/llm/llm_metrics.cc, rendered by net/metrics.cc.
TEST(PrometheusTextTest, ParsesWhatOurLlmServerRenders) {
  MetricsRegistry r;
  r.AddGauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig.", {"block_size", "num_gpu_blocks"})
      .WithLabels({"16", "4096"})
      .Set(1);
  r.AddGauge("vllm:num_requests_running", "Number of requests in model execution batches.", {"model_name"})
      .WithLabels({"omni-demo"})
      .Set(2);
  r.AddGauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", {"model_name"})
      .WithLabels({"omni-demo"})
      .Set(3);
  r.AddGauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", {"model_name"})
      .WithLabels({"omni-demo"})
      .Set(0.25);
  r.AddCounter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
               {"model_name"})
      .WithLabels({"omni-demo"})
      .Inc(1000);
  r.AddCounter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
               {"model_name"})
      .WithLabels({"omni-demo"})
      .Inc(750);
  HistogramFamily& ttft = r.AddHistogram("vllm:time_to_first_token_seconds",
                                         "Histogram of time to first token in seconds.", {"model_name"},
                                         DefaultLatencyBuckets());
  ttft.WithLabels({"omni-demo"}).Observe(0.003);
  ttft.WithLabels({"omni-demo"}).Observe(100);
  r.AddCounter("vllm:request_success_total", "Count of finished requests.", {"model_name", "finished_reason"})
      .WithLabels({"omni-demo", "stop"})
      .Inc(7);
  r.AddCounter("weird_total", "Help with a \\ backslash\nand a newline.", {"v"})
      .WithLabels({"quote \" backslash \\ newline \n end"})
      .Inc();

  auto s = MustParse(r.Render());
  // 6 gauges/counters + (15 buckets + +Inf + _sum + _count) + 1 + 1.
  ASSERT_EQ(s.size(), 6u + 18u + 2u);
  EXPECT_EQ(s[0].name, "vllm:cache_config_info");
  EXPECT_EQ(s[0].labels, (Labels{{"block_size", "16"}, {"num_gpu_blocks", "4096"}}));
  EXPECT_EQ(s[0].value, 1);
  EXPECT_EQ(s[1].name, "vllm:num_requests_running");
  EXPECT_EQ(s[1].labels, (Labels{{"model_name", "omni-demo"}}));
  EXPECT_EQ(s[1].value, 2);
  EXPECT_EQ(s[3].value, 0.25);

  EXPECT_EQ(s[6].name, "vllm:time_to_first_token_seconds_bucket");
  EXPECT_EQ(s[6].labels, (Labels{{"model_name", "omni-demo"}, {"le", "0.001"}}));
  EXPECT_EQ(s[6].value, 0);
  EXPECT_EQ(s[8].labels, (Labels{{"model_name", "omni-demo"}, {"le", "0.005"}}));
  EXPECT_EQ(s[8].value, 1);
  EXPECT_EQ(s[21].labels, (Labels{{"model_name", "omni-demo"}, {"le", "+Inf"}}));
  EXPECT_EQ(s[21].value, 2);
  EXPECT_EQ(s[22].name, "vllm:time_to_first_token_seconds_sum");
  EXPECT_EQ(s[22].value, 100.003);
  EXPECT_EQ(s[23].name, "vllm:time_to_first_token_seconds_count");
  EXPECT_EQ(s[23].value, 2);
  EXPECT_EQ(s[24].labels, (Labels{{"model_name", "omni-demo"}, {"finished_reason", "stop"}}));
  EXPECT_EQ(s[25].labels, (Labels{{"v", "quote \" backslash \\ newline \n end"}}));

  VllmLoadMetrics m = ExtractVllmLoadMetrics(s);
  EXPECT_EQ(m.num_requests_waiting, 3);
  EXPECT_EQ(m.num_requests_running, 2);
  EXPECT_EQ(m.kv_cache_usage_perc, 0.25);
  EXPECT_EQ(m.block_size, 16);
  EXPECT_EQ(m.num_gpu_blocks, 4096);
  EXPECT_EQ(m.prefix_cache_queries_total, 1000);
  EXPECT_EQ(m.prefix_cache_hits_total, 750);
}

// A page as omniserve llm serves it, written out by hand (so a change to the
// renderer that the parser does not follow shows up here).
constexpr std::string_view kOmniservePage =
    "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig.\n"
    "# TYPE vllm:cache_config_info gauge\n"
    "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"31250\"} 1\n"
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{model_name=\"omni-demo\"} 8\n"
    "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    "vllm:num_requests_waiting{model_name=\"omni-demo\"} 0\n"
    "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{model_name=\"omni-demo\"} 0.0421\n"
    "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n"
    "# TYPE vllm:prefix_cache_queries_total counter\n"
    "vllm:prefix_cache_queries_total{model_name=\"omni-demo\"} 123456\n"
    "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
    "# TYPE vllm:prefix_cache_hits_total counter\n"
    "vllm:prefix_cache_hits_total{model_name=\"omni-demo\"} 98304\n"
    "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{model_name=\"omni-demo\",le=\"0.001\"} 0\n"
    "vllm:time_to_first_token_seconds_bucket{model_name=\"omni-demo\",le=\"+Inf\"} 12\n"
    "vllm:time_to_first_token_seconds_sum{model_name=\"omni-demo\"} 1.5e-05\n"
    "vllm:time_to_first_token_seconds_count{model_name=\"omni-demo\"} 12\n";

TEST(PrometheusTextTest, ExtractsFromAnOmniservePage) {
  auto s = MustParse(kOmniservePage);
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(s[8].value, 1.5e-05);
  VllmLoadMetrics m = ExtractVllmLoadMetrics(s);
  EXPECT_EQ(m.num_requests_running, 8);
  EXPECT_EQ(m.num_requests_waiting, 0);
  EXPECT_EQ(m.kv_cache_usage_perc, 0.0421);
  EXPECT_EQ(m.block_size, 16);
  EXPECT_EQ(m.num_gpu_blocks, 31250);
  EXPECT_EQ(m.prefix_cache_queries_total, 123456);
  EXPECT_EQ(m.prefix_cache_hits_total, 98304);
}

TEST(PrometheusTextTest, ExtractSumsLabelSetsAndTakesMaxKvUsage) {
  auto s = MustParse(
      "vllm:num_requests_waiting{model_name=\"a\"} 3\n"
      "vllm:num_requests_waiting{model_name=\"b\"} 4\n"
      "vllm:num_requests_running{model_name=\"a\"} 1.5\n"
      "vllm:num_requests_running{model_name=\"b\"} 2\n"
      "vllm:kv_cache_usage_perc{model_name=\"a\"} 0.5\n"
      "vllm:kv_cache_usage_perc{model_name=\"b\"} 0.75\n"
      "vllm:prefix_cache_queries_total{model_name=\"a\"} 100\n"
      "vllm:prefix_cache_queries_total{model_name=\"b\"} 50\n"
      "vllm:prefix_cache_hits_total{model_name=\"a\"} 10\n"
      "vllm:prefix_cache_hits_total{model_name=\"b\"} 20\n"
      "vllm:num_requests_waiting_other 100\n"
      "other:num_requests_waiting 100\n");
  VllmLoadMetrics m = ExtractVllmLoadMetrics(s);
  EXPECT_EQ(m.num_requests_waiting, 7);
  EXPECT_EQ(m.num_requests_running, 3.5);
  EXPECT_EQ(m.kv_cache_usage_perc, 0.75);
  EXPECT_EQ(m.prefix_cache_queries_total, 150);
  EXPECT_EQ(m.prefix_cache_hits_total, 30);
  EXPECT_FALSE(m.block_size.has_value());
  EXPECT_FALSE(m.num_gpu_blocks.has_value());
}

TEST(PrometheusTextTest, ExtractEmptyPageLeavesEverythingUnset) {
  VllmLoadMetrics m = ExtractVllmLoadMetrics({});
  EXPECT_FALSE(m.num_requests_waiting || m.num_requests_running || m.kv_cache_usage_perc || m.num_gpu_blocks ||
               m.block_size || m.prefix_cache_queries_total || m.prefix_cache_hits_total);
}

TEST(PrometheusTextTest, ExtractReadsOlderVllmNamesOnlyAsFallback) {
  auto old_only = MustParse(
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.3\n"
      "vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 40\n"
      "vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 10\n");
  VllmLoadMetrics m = ExtractVllmLoadMetrics(old_only);
  EXPECT_EQ(m.kv_cache_usage_perc, 0.3);
  EXPECT_EQ(m.prefix_cache_queries_total, 40);
  EXPECT_EQ(m.prefix_cache_hits_total, 10);

  auto both = MustParse(
      "vllm:gpu_cache_usage_perc 0.9\n"
      "vllm:kv_cache_usage_perc 0.2\n");
  EXPECT_EQ(ExtractVllmLoadMetrics(both).kv_cache_usage_perc, 0.2);
}

TEST(PrometheusTextTest, ExtractIgnoresNonFiniteValues) {
  auto s = MustParse(
      "vllm:num_requests_waiting{model_name=\"a\"} NaN\n"
      "vllm:num_requests_waiting{model_name=\"b\"} 2\n"
      "vllm:num_requests_running +Inf\n"
      "vllm:kv_cache_usage_perc NaN\n"
      "vllm:gpu_cache_usage_perc 0.6\n");
  VllmLoadMetrics m = ExtractVllmLoadMetrics(s);
  EXPECT_EQ(m.num_requests_waiting, 2);
  EXPECT_FALSE(m.num_requests_running.has_value());
  EXPECT_EQ(m.kv_cache_usage_perc, 0.6);  // the current name had no usable sample
}

TEST(PrometheusTextTest, ExtractCacheConfigFromLabels) {
  // vLLM's own series carries more labels, and "None" before profiling.
  auto vllm = MustParse(
      "vllm:cache_config_info{block_size=\"32\",cache_dtype=\"auto\",gpu_memory_utilization=\"0.9\","
      "num_cpu_blocks=\"None\",num_gpu_blocks=\"27910\",enable_prefix_caching=\"True\"} 1.0\n");
  VllmLoadMetrics m = ExtractVllmLoadMetrics(vllm);
  EXPECT_EQ(m.block_size, 32);
  EXPECT_EQ(m.num_gpu_blocks, 27910);

  auto unknown = MustParse("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1\n");
  m = ExtractVllmLoadMetrics(unknown);
  EXPECT_EQ(m.block_size, 16);
  EXPECT_FALSE(m.num_gpu_blocks.has_value());

  // A stale series left at 0 is skipped; the last live one wins.
  auto several = MustParse(
      "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\"} 1\n"
      "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"200\"} 1\n"
      "vllm:cache_config_info{block_size=\"8\",num_gpu_blocks=\"300\"} 0\n");
  m = ExtractVllmLoadMetrics(several);
  EXPECT_EQ(m.block_size, 16);
  EXPECT_EQ(m.num_gpu_blocks, 200);

  auto no_labels = MustParse("vllm:cache_config_info 1\n");
  m = ExtractVllmLoadMetrics(no_labels);
  EXPECT_FALSE(m.block_size.has_value());
  EXPECT_FALSE(m.num_gpu_blocks.has_value());
}

}  // namespace
}  // namespace omni
