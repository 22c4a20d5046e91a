// libFuzzer target for ParsePrometheusText and ExtractVllmLoadMetrics
// (services/gateway/prometheus_text.h), which read every endpoint's /metrics.
// Seeds: fuzz/corpus/prometheus_text (pages from omniserve llm and vLLM, and
// edge cases of the format).
//
// For any input the parser must return samples or an InvalidArgument that
// names a line of the input, never crash or read out of bounds. What it
// accepts must survive a round trip: rendering the samples back in the
// exposition format and parsing that gives the same names, labels, values
// (bit for bit, any NaN matching any NaN) and timestamps. Extraction must
// not crash and yields no NaN load values.
//
// The gateway_leaf corpus test also links this file and replays the corpus.
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "services/gateway/prometheus_text.h"

namespace {

using omni::PromSample;

void AppendValue(double v, std::string* out) {
  if (std::isnan(v)) {
    *out += "NaN";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip
    OMNI_CHECK(ec == std::errc());
    out->append(buf, end);
  }
}

std::string Render(const std::vector<PromSample>& samples) {
  std::string out = "# TYPE rendered untyped\n";
  for (const PromSample& s : samples) {
    out += s.name;
    if (!s.labels.empty()) {
      out += '{';
      for (const auto& [k, v] : s.labels) {
        out += k;
        out += "=\"";
        for (char c : v) {
          if (c == '\\') out += "\\\\";
          else if (c == '"') out += "\\\"";
          else if (c == '\n') out += "\\n";
          else out += c;
        }
        out += "\",";
      }
      out += '}';
    }
    out += ' ';
    AppendValue(s.value, &out);
    if (s.timestamp_ms) {
      out += ' ';
      out += std::to_string(*s.timestamp_ms);
    }
    out += '\n';
  }
  return out;
}

bool SameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  omni::StatusOr<std::vector<PromSample>> samples = omni::ParsePrometheusText(input);
  if (!samples.ok()) {
    const omni::Status status = samples.status();  // by value: keep it alive for `m`
    const std::string& m = status.message();
    OMNI_CHECK(status.code() == omni::StatusCode::kInvalidArgument);
    OMNI_CHECK(m.starts_with("line ")) << m;
    int line = 0;
    std::from_chars(m.data() + 5, m.data() + m.size(), line);
    size_t lines = 1;
    for (char c : input) lines += c == '\n';
    OMNI_CHECK(line >= 1 && static_cast<size_t>(line) <= lines) << m;
    return 0;
  }
  omni::StatusOr<std::vector<PromSample>> again = omni::ParsePrometheusText(Render(*samples));
  OMNI_CHECK(again.ok()) << again.status().ToString();
  OMNI_CHECK_EQ(again->size(), samples->size());
  for (size_t i = 0; i < samples->size(); ++i) {
    const PromSample& a = (*samples)[i];
    const PromSample& b = (*again)[i];
    OMNI_CHECK(a.name == b.name);
    OMNI_CHECK(a.labels == b.labels);
    OMNI_CHECK(SameValue(a.value, b.value));
    OMNI_CHECK(a.timestamp_ms == b.timestamp_ms);
  }
  omni::VllmLoadMetrics m = omni::ExtractVllmLoadMetrics(*samples);
  for (const std::optional<double>& v : {m.num_requests_waiting, m.num_requests_running, m.kv_cache_usage_perc,
                                         m.prefix_cache_queries_total, m.prefix_cache_hits_total}) {
    // A sum of finite values can still overflow to infinity; never NaN.
    OMNI_CHECK(!v || !std::isnan(*v));
  }
  return 0;
}
