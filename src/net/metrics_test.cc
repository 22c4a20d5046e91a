#include "net/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace omni {
namespace {

TEST(MetricsTest, CounterAndGaugeExposition) {
  MetricsRegistry reg;
  auto& requests = reg.AddCounter("http_requests_total", "Requests served.", {"path", "status"});
  requests.WithLabels({"/v1/chat", "200"}).Inc();
  requests.WithLabels({"/v1/chat", "200"}).Inc(2);
  requests.WithLabels({"/health", "503"}).Inc();
  auto& running = reg.AddGauge("vllm:num_requests_running", "Requests running.");
  running.Get().Set(3);
  running.Get().Dec(0.5);
  EXPECT_EQ(reg.Render(),
            "# HELP http_requests_total Requests served.\n"
            "# TYPE http_requests_total counter\n"
            "http_requests_total{path=\"/health\",status=\"503\"} 1\n"
            "http_requests_total{path=\"/v1/chat\",status=\"200\"} 3\n"
            "# HELP vllm:num_requests_running Requests running.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running 2.5\n");
}

TEST(MetricsTest, HistogramExposition) {
  MetricsRegistry reg;
  auto& latency = reg.AddHistogram("latency_seconds", "Latency.", {"model"}, {0.25, 1, 2.5});
  Histogram& h = latency.WithLabels({"m"});
  h.Observe(0.25);  // le is inclusive
  h.Observe(0.5);
  h.Observe(1);
  h.Observe(10);
  EXPECT_EQ(reg.Render(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{model=\"m\",le=\"0.25\"} 1\n"
            "latency_seconds_bucket{model=\"m\",le=\"1\"} 3\n"
            "latency_seconds_bucket{model=\"m\",le=\"2.5\"} 3\n"
            "latency_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n"
            "latency_seconds_sum{model=\"m\"} 11.75\n"
            "latency_seconds_count{model=\"m\"} 4\n");
}

TEST(MetricsTest, HistogramWithoutLabels) {
  MetricsRegistry reg;
  reg.AddHistogram("x", "X.", {}, {1}).Get().Observe(2);
  EXPECT_EQ(reg.Render(),
            "# HELP x X.\n# TYPE x histogram\n"
            "x_bucket{le=\"1\"} 0\nx_bucket{le=\"+Inf\"} 1\nx_sum 2\nx_count 1\n");
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry reg;
  reg.AddCounter("c", "Help with \\ and\nnewline \"quotes\".", {"l"}).WithLabels({"a\"b\\c\nd"}).Inc();
  EXPECT_EQ(reg.Render(),
            "# HELP c Help with \\\\ and\\nnewline \"quotes\".\n"
            "# TYPE c counter\n"
            "c{l=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(MetricsTest, FamilyWithNoChildrenRendersHeaderOnly) {
  MetricsRegistry reg;
  reg.AddCounter("empty_total", "Nothing yet.", {"a"});
  EXPECT_EQ(reg.Render(), "# HELP empty_total Nothing yet.\n# TYPE empty_total counter\n");
}

TEST(MetricsTest, ValueFormatting) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(42), "42");
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(FormatMetricValue(1e21), "1e+21");
  EXPECT_EQ(FormatMetricValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatMetricValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatMetricValue(NAN), "NaN");
}

TEST(MetricsTest, NameValidation) {
  EXPECT_TRUE(IsValidMetricName("vllm:num_requests_running"));
  EXPECT_TRUE(IsValidMetricName("_x1"));
  EXPECT_FALSE(IsValidMetricName("1x"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("status"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("__name"));
}

TEST(MetricsDeathTest, BadRegistrationsAbort) {
  EXPECT_DEATH(MetricsRegistry().AddCounter("bad-name", "x"), "invalid metric name");
  EXPECT_DEATH(MetricsRegistry().AddHistogram("h", "x", {"le"}, {1}), "reserved");
  EXPECT_DEATH(MetricsRegistry().AddHistogram("h", "x", {}, {2, 1}), "");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("dup", "x");
        r.AddGauge("dup", "y");
      },
      "registered twice");
  EXPECT_DEATH(MetricsRegistry().AddCounter("c", "x", {"a"}).WithLabels({}), "label values");
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry reg;
  auto& counter = reg.AddCounter("n_total", "N.", {"t"});
  auto& hist = reg.AddHistogram("h", "H.", {}, {0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Counter& c = counter.WithLabels({"x"});
      for (int i = 0; i < 10000; ++i) {
        c.Inc();
        hist.Get().Observe(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter.WithLabels({"x"}).Value(), 40000);
  EXPECT_EQ(hist.Get().Count(), 40000u);
  EXPECT_EQ(hist.Get().Sum(), 40000);
}

}  // namespace
}  // namespace omni
