#include "services/gateway/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/ascii.h"

namespace omni {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c, bool allow_colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

// Go's strconv.ParseFloat, which Prometheus uses, minus hex floats and
// underscores (no exporter writes those). from_chars is locale-independent.
bool ParseSampleValue(std::string_view s, double* out) {
  std::string_view body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (EqualsIgnoreCase(body, "inf") || EqualsIgnoreCase(body, "infinity")) {
    *out = negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  if (EqualsIgnoreCase(body, "nan")) {
    if (body.size() != s.size()) return false;  // Go rejects a signed NaN
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  // from_chars takes no '+' and would read "-+1" as an error anyway; the
  // sign was consumed above, so a second one here is rejected.
  if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  for (char c : body) {  // from_chars also takes "nan(...)" and "infinity"
    if (!IsDigit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') return false;
  }
  // An exporter writes the shortest round-trip form, so a value out of a
  // double's range (1e400, or 1e-400 below the smallest subnormal) is not
  // one it wrote; Prometheus rejects the overflow, this also the underflow.
  double v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec != std::errc() || end != body.data() + body.size()) return false;
  *out = negative ? -v : v;
  return true;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  std::string_view digits = s[0] == '-' ? s.substr(1) : s;
  if (digits.empty() || !IsDigit(digits[0])) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Scans one sample line. `line` has no newline and is not blank or a comment.
class LineParser {
 public:
  LineParser(std::string_view line, int line_number) : s_(line), line_number_(line_number) {}

  Status Parse(PromSample* out) {
    SkipBlanks();
    std::string_view name = ReadName(/*allow_colon=*/true);
    if (name.empty()) return Error("expected a metric name");
    out->name.assign(name);
    if (Peek() == '{') {
      ++pos_;
      OMNI_RETURN_IF_ERROR(ParseLabels(out));
    }
    if (!AtEnd() && !IsBlank(Peek())) return Error("expected a blank after the metric name or labels");
    SkipBlanks();
    std::string_view value = ReadToken();
    if (value.empty()) return Error("missing value");
    if (!ParseSampleValue(value, &out->value)) return Error("bad value \"" + std::string(value) + "\"");
    SkipBlanks();
    if (AtEnd()) return Status::Ok();
    std::string_view ts = ReadToken();
    int64_t t = 0;
    if (!ParseInt64(ts, &t)) return Error("bad timestamp \"" + std::string(ts) + "\"");
    out->timestamp_ms = t;
    SkipBlanks();
    if (!AtEnd()) return Error("unexpected text after the timestamp");
    return Status::Ok();
  }

 private:
  Status ParseLabels(PromSample* out) {
    while (true) {
      SkipBlanks();
      if (Peek() == '}') {
        ++pos_;
        return Status::Ok();
      }
      std::string_view label = ReadName(/*allow_colon=*/false);
      if (label.empty()) return Error("expected a label name or '}'");
      for (const auto& [k, v] : out->labels) {
        if (k == label) return Error("duplicate label \"" + std::string(label) + "\"");
      }
      SkipBlanks();
      if (Peek() != '=') return Error("expected '=' after label name \"" + std::string(label) + "\"");
      ++pos_;
      SkipBlanks();
      if (Peek() != '"') return Error("expected '\"' to open the value of label \"" + std::string(label) + "\"");
      ++pos_;
      std::string value;
      OMNI_RETURN_IF_ERROR(ReadLabelValue(&value));
      out->labels.emplace_back(std::string(label), std::move(value));
      SkipBlanks();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != '}') {
        return Error("expected ',' or '}' after a label value");
      }
    }
  }

  // After the opening quote; consumes the closing one.
  Status ReadLabelValue(std::string* out) {
    while (true) {
      size_t stop = s_.find_first_of("\"\\", pos_);
      if (stop == std::string_view::npos) return Error("unterminated label value");
      out->append(s_.substr(pos_, stop - pos_));
      pos_ = stop + 1;
      if (s_[stop] == '"') return Status::Ok();
      if (AtEnd()) return Error("unterminated label value");
      switch (s_[pos_++]) {
        case '\\': *out += '\\'; break;
        case '"': *out += '"'; break;
        case 'n': *out += '\n'; break;
        default: return Error("invalid escape in label value (only \\\\, \\\" and \\n)");
      }
    }
  }

  std::string_view ReadName(bool allow_colon) {
    size_t start = pos_;
    if (AtEnd() || !IsNameStart(s_[pos_], allow_colon)) return {};
    ++pos_;
    while (!AtEnd() && (IsNameStart(s_[pos_], allow_colon) || IsDigit(s_[pos_]))) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  std::string_view ReadToken() {
    size_t start = pos_;
    while (!AtEnd() && !IsBlank(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  void SkipBlanks() {
    while (!AtEnd() && IsBlank(s_[pos_])) ++pos_;
  }
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return AtEnd() ? '\0' : s_[pos_]; }

  Status Error(std::string message) const {
    return InvalidArgument("line " + std::to_string(line_number_) + ": " + message);
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_number_;
};

}  // namespace

const std::string* PromSample::Label(std::string_view name) const {
  for (const auto& [k, v] : labels) {
    if (k == name) return &v;
  }
  return nullptr;
}

StatusOr<std::vector<PromSample>> ParsePrometheusText(std::string_view text) {
  std::vector<PromSample> samples;
  int line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t first = 0;
    while (first < line.size() && IsBlank(line[first])) ++first;
    if (first == line.size() || line[first] == '#') continue;
    PromSample sample;
    OMNI_RETURN_IF_ERROR(LineParser(line, line_number).Parse(&sample));
    samples.push_back(std::move(sample));
  }
  return samples;
}

namespace {

enum class Combine { kSum, kMax };

// Combines the finite values of every sample named `name`.
std::optional<double> Aggregate(std::span<const PromSample> samples, std::string_view name, Combine combine) {
  std::optional<double> out;
  for (const PromSample& s : samples) {
    if (s.name != name || !std::isfinite(s.value)) continue;
    if (!out) {
      out = s.value;
    } else {
      *out = combine == Combine::kSum ? *out + s.value : std::max(*out, s.value);
    }
  }
  return out;
}

std::optional<double> AggregateEither(std::span<const PromSample> samples, std::string_view name,
                                      std::string_view legacy_name, Combine combine) {
  std::optional<double> v = Aggregate(samples, name, combine);
  return v ? v : Aggregate(samples, legacy_name, combine);
}

std::optional<int64_t> IntLabel(const PromSample& s, std::string_view label) {
  const std::string* text = s.Label(label);
  int64_t v = 0;
  if (text == nullptr || !ParseInt64(*text, &v)) return std::nullopt;
  return v;
}

}  // namespace

VllmLoadMetrics ExtractVllmLoadMetrics(std::span<const PromSample> samples) {
  VllmLoadMetrics m;
  m.num_requests_waiting = Aggregate(samples, "vllm:num_requests_waiting", Combine::kSum);
  m.num_requests_running = Aggregate(samples, "vllm:num_requests_running", Combine::kSum);
  m.kv_cache_usage_perc =
      AggregateEither(samples, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", Combine::kMax);
  m.prefix_cache_queries_total = AggregateEither(samples, "vllm:prefix_cache_queries_total",
                                                 "vllm:gpu_prefix_cache_queries_total", Combine::kSum);
  m.prefix_cache_hits_total =
      AggregateEither(samples, "vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total", Combine::kSum);
  for (const PromSample& s : samples) {
    if (s.name != "vllm:cache_config_info" || s.value == 0 || std::isnan(s.value)) continue;
    m.block_size = IntLabel(s, "block_size");
    m.num_gpu_blocks = IntLabel(s, "num_gpu_blocks");
  }
  return m;
}

}  // namespace omni
