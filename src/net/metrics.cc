#include "net/metrics.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace omni {
namespace {

std::string_view TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

// Label values escape backslash, double quote and newline (format 0.0.4).
void AppendEscapedLabelValue(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

// HELP text escapes only backslash and newline.
void AppendEscapedHelp(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

bool IsNameChar(char c, bool first, bool allow_colon) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

void AppendSample(std::string& out, std::string_view name, std::string_view suffix, std::string_view labels,
                  double value) {
  out += name;
  out += suffix;
  out += labels;
  out += ' ';
  out += FormatMetricValue(value);
  out += '\n';
}

}  // namespace

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, /*allow_colon=*/true)) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;  // "__" is reserved for Prometheus itself
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, /*allow_colon=*/false)) return false;
  }
  return true;
}

void Counter::Inc(double v) {
  OMNI_DCHECK(v >= 0);
  value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    OMNI_CHECK(std::isfinite(bounds_[i])) << "histogram bounds must be finite; +Inf is implicit";
    if (i > 0) OMNI_CHECK_LT(bounds_[i - 1], bounds_[i]);
  }
  buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  // "le" is inclusive: v lands in the first bucket whose bound is >= v.
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> DefaultLatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

MetricFamilyBase::MetricFamilyBase(std::string name, std::string help, MetricType type,
                                   std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {
  OMNI_CHECK(IsValidMetricName(name_)) << "invalid metric name '" << name_ << "'";
  for (const auto& l : label_names_) {
    OMNI_CHECK(IsValidLabelName(l)) << "invalid label name '" << l << "' in " << name_;
    OMNI_CHECK(!(type_ == MetricType::kHistogram && l == "le")) << "'le' is reserved in histogram " << name_;
  }
}

void MetricFamilyBase::CheckArity(const std::vector<std::string>& values) const {
  OMNI_CHECK_EQ(values.size(), label_names_.size()) << "label values for " << name_;
}

std::string MetricFamilyBase::LabelSet(const std::vector<std::string>& values, std::string_view extra) const {
  if (values.empty() && extra.empty()) return {};
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += label_names_[i];
    out += "=\"";
    AppendEscapedLabelValue(out, values[i]);
    out += '"';
  }
  if (!extra.empty()) {
    if (!values.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

void MetricFamilyBase::Render(std::string& out) const {
  out += "# HELP ";
  out += name_;
  out += ' ';
  AppendEscapedHelp(out, help_);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += TypeName(type_);
  out += '\n';
  RenderSamples(out);
}

template <>
void MetricFamily<Counter>::RenderSamples(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [values, c] : children_) AppendSample(out, name(), "", LabelSet(values), c->Value());
}

template <>
void MetricFamily<Gauge>::RenderSamples(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [values, g] : children_) AppendSample(out, name(), "", LabelSet(values), g->Value());
}

template <>
void MetricFamily<Histogram>::RenderSamples(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [values, h] : children_) {
    // Read the buckets once; count is their total, so the rendered
    // _count always equals the +Inf bucket even while others observe.
    std::vector<uint64_t> counts = h->BucketCounts();
    uint64_t cumulative = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i];
      std::string le = i < h->bounds().size() ? FormatMetricValue(h->bounds()[i]) : "+Inf";
      AppendSample(out, name(), "_bucket", LabelSet(values, "le=\"" + le + "\""), static_cast<double>(cumulative));
    }
    AppendSample(out, name(), "_sum", LabelSet(values), h->Sum());
    AppendSample(out, name(), "_count", LabelSet(values), static_cast<double>(cumulative));
  }
}

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                                 std::vector<double> bounds)
    : MetricFamily<Histogram>(std::move(name), std::move(help), MetricType::kHistogram, std::move(label_names)),
      bounds_(std::move(bounds)) {
  Histogram probe(bounds_);  // validates the bounds at registration, not at first use
}

template <typename F>
F& MetricsRegistry::Add(std::unique_ptr<F> family) {
  std::lock_guard lock(mu_);
  for (const auto& f : families_) {
    OMNI_CHECK(f->name() != family->name()) << "metric " << family->name() << " registered twice";
  }
  F& ref = *family;
  families_.push_back(std::move(family));
  return ref;
}

CounterFamily& MetricsRegistry::AddCounter(std::string name, std::string help, std::vector<std::string> labels) {
  return Add(std::make_unique<CounterFamily>(std::move(name), std::move(help), MetricType::kCounter,
                                             std::move(labels)));
}

GaugeFamily& MetricsRegistry::AddGauge(std::string name, std::string help, std::vector<std::string> labels) {
  return Add(std::make_unique<GaugeFamily>(std::move(name), std::move(help), MetricType::kGauge,
                                           std::move(labels)));
}

HistogramFamily& MetricsRegistry::AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                                               std::vector<double> bounds) {
  return Add(std::make_unique<HistogramFamily>(std::move(name), std::move(help), std::move(labels),
                                               std::move(bounds)));
}

std::string MetricsRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& f : families_) f->Render(out);
  return out;
}

}  // namespace omni
