#include "services/loadgen/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace omni::loadgen {

double Percentile(std::span<const double> sorted, double p) {
  OMNI_CHECK(!sorted.empty());
  OMNI_CHECK(p >= 0 && p <= 100) << "percentile " << p;
  double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution Summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = values.size();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.min = values.front();
  d.max = values.back();
  d.p50 = Percentile(values, 50);
  d.p90 = Percentile(values, 90);
  d.p99 = Percentile(values, 99);
  return d;
}

BenchSummary Summarize(const std::vector<RequestRecord>& records, double duration_s) {
  BenchSummary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t cached_prompt_tokens = 0;  // prompt tokens of responses that reported cached_tokens
  bool any_cached_report = false;
  double prefill_time_s = 0;
  int64_t prefill_tokens = 0;
  for (const RequestRecord& r : records) {
    ++s.requests;
    if (!r.ok) {
      ++s.failed;
      ++s.errors[r.error_kind.empty() ? "unknown" : r.error_kind];
      continue;
    }
    ++s.completed;
    s.prompt_tokens += r.prompt_tokens;
    s.completion_tokens += r.completion_tokens;
    if (r.cached_tokens_reported) {
      any_cached_report = true;
      s.cached_tokens += r.cached_tokens;
      cached_prompt_tokens += r.prompt_tokens;
    }
    if (r.completion_tokens > 0) {
      ttft.push_back(r.ttft_s * 1e3);
      prefill_time_s += r.ttft_s;
      prefill_tokens += r.prompt_tokens - r.cached_tokens;
    }
    e2e.push_back(r.e2e_s * 1e3);
    if (r.completion_tokens > 1) {
      tpot.push_back((r.e2e_s - r.ttft_s) / static_cast<double>(r.completion_tokens - 1) * 1e3);
    }
    for (double g : r.itl_s) itl.push_back(g * 1e3);
  }
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / duration_s;
    s.output_tokens_per_s = static_cast<double>(s.completion_tokens) / duration_s;
    s.total_tokens_per_s = static_cast<double>(s.prompt_tokens + s.completion_tokens) / duration_s;
  }
  if (prefill_time_s > 0) s.prefill_tokens_per_s = static_cast<double>(prefill_tokens) / prefill_time_s;
  if (any_cached_report && cached_prompt_tokens > 0) {
    s.prefix_cache_hit_rate = static_cast<double>(s.cached_tokens) / static_cast<double>(cached_prompt_tokens);
  }
  s.ttft_ms = Summarize(std::move(ttft));
  s.tpot_ms = Summarize(std::move(tpot));
  s.itl_ms = Summarize(std::move(itl));
  s.e2e_ms = Summarize(std::move(e2e));
  return s;
}

}  // namespace omni::loadgen
