// Prometheus metrics: counters, gauges and histograms grouped in labelled
// families, rendered in the text exposition format 0.0.4.
//
//   MetricsRegistry reg;
//   auto& requests = reg.AddCounter("http_requests_total", "Requests.", {"path", "status"});
//   Counter& ok = requests.WithLabels({"/v1/chat", "200"});  // cache this
//   ok.Inc();
//
// Updates are lock-free atomics. Looking a child up by label values takes the
// family's mutex, so hot paths look a child up once and keep the reference;
// children live as long as the registry. Metric names may contain ':'
// (vLLM's "vllm:num_requests_running"). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace omni {

class Counter {
 public:
  // `v` must be >= 0: a counter only goes up.
  void Inc(double v = 1);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Dec(double v = 1) { value_.fetch_sub(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: strictly increasing finite upper bounds; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);

  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket (not cumulative) counts, bounds().size() + 1 entries, the last for +Inf.
  std::vector<uint64_t> BucketCounts() const;
  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  double Sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // [bounds_.size() + 1]
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Buckets suited to request latencies in seconds, 1 ms to 60 s.
std::vector<double> DefaultLatencyBuckets();

enum class MetricType { kCounter, kGauge, kHistogram };

class MetricFamilyBase {
 public:
  MetricFamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  virtual ~MetricFamilyBase() = default;
  const std::string& name() const { return name_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Appends the family's "# HELP", "# TYPE" and sample lines to `out`.
  void Render(std::string& out) const;

 protected:
  virtual void RenderSamples(std::string& out) const = 0;
  // `{a="x",b="y"}` for the given values, with `extra` (e.g. le="0.5") appended.
  std::string LabelSet(const std::vector<std::string>& values, std::string_view extra = {}) const;
  void CheckArity(const std::vector<std::string>& values) const;

  mutable std::mutex mu_;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

template <typename T>
class MetricFamily : public MetricFamilyBase {
 public:
  using MetricFamilyBase::MetricFamilyBase;
  // The child for these label values (one per label name), created on first
  // use. The reference stays valid for the registry's lifetime.
  T& WithLabels(const std::vector<std::string>& values) {
    CheckArity(values);
    std::lock_guard lock(mu_);
    auto it = children_.find(values);
    if (it == children_.end()) it = children_.emplace(values, MakeChild()).first;
    return *it->second;
  }
  // The one child of a family without labels.
  T& Get() { return WithLabels({}); }

 protected:
  // Histograms override this to pass their bounds; the rest default-construct.
  virtual std::unique_ptr<T> MakeChild() const {
    if constexpr (std::is_default_constructible_v<T>) {
      return std::make_unique<T>();
    } else {
      return nullptr;  // never reached: HistogramFamily overrides MakeChild
    }
  }
  void RenderSamples(std::string& out) const override;

  // Ordered by label values so the exposition is deterministic.
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;  // guarded by mu_
};

// Defined in metrics.cc, one per metric type.
template <>
void MetricFamily<Counter>::RenderSamples(std::string& out) const;
template <>
void MetricFamily<Gauge>::RenderSamples(std::string& out) const;
template <>
void MetricFamily<Histogram>::RenderSamples(std::string& out) const;

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;

class HistogramFamily : public MetricFamily<Histogram> {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> bounds);

 protected:
  std::unique_ptr<Histogram> MakeChild() const override { return std::make_unique<Histogram>(bounds_); }

 private:
  std::vector<double> bounds_;
};

class MetricsRegistry {
 public:
  // Registration checks names (an invalid or duplicate name is a bug and
  // aborts). Families render in registration order.
  CounterFamily& AddCounter(std::string name, std::string help, std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  HistogramFamily& AddHistogram(std::string name, std::string help, std::vector<std::string> label_names,
                                std::vector<double> bounds);

  // Text exposition format 0.0.4; serve with kPrometheusContentType.
  std::string Render() const;

 private:
  template <typename F>
  F& Add(std::unique_ptr<F> family);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricFamilyBase>> families_;  // guarded by mu_
};

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// Prometheus number formatting: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
std::string FormatMetricValue(double v);
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace omni
