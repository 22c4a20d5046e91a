// Per-request measurements of `omniserve bench` and their summary. Pure code:
// the runner fills RequestRecords, Summarize() turns them into the numbers
// the table and the JSON report show (definitions in docs/BENCH.md).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace omni::loadgen {

// What one request measured. Times are seconds; `start_s` is from the start
// of the run, the others from the moment the request was sent.
struct RequestRecord {
  int conversation_id = 0;
  int turn = 0;
  double start_s = 0;
  bool ok = false;
  std::string error_kind;     // empty when ok; "http_404", "connect", ... (docs/BENCH.md)
  std::string error_message;
  double ttft_s = 0;          // first non-empty content delta
  double e2e_s = 0;           // until the stream ended
  std::vector<double> itl_s;  // gaps between successive content deltas
  int64_t prompt_tokens = 0;      // from usage
  int64_t completion_tokens = 0;  // from usage, else the number of content deltas
  int64_t cached_tokens = 0;      // usage.prompt_tokens_details.cached_tokens
  bool usage_reported = false;
  bool cached_tokens_reported = false;
  std::string output_text;        // the generated text (multi-turn resends it)
};

// Linear interpolation between the closest ranks (numpy.percentile's default),
// p in [0, 100]. `sorted` must be ascending and non-empty.
double Percentile(std::span<const double> sorted, double p);

struct Distribution {
  size_t count = 0;
  double mean = 0;
  double min = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

// Sorts `values` and summarises them; all zero when empty.
Distribution Summarize(std::vector<double> values);

struct BenchSummary {
  int64_t requests = 0;   // sent or attempted
  int64_t completed = 0;  // ok
  int64_t failed = 0;
  std::map<std::string, int64_t> errors;  // kind -> count
  double duration_s = 0;
  int64_t prompt_tokens = 0;      // sums over completed requests
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  double request_throughput = 0;  // completed / duration
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;  // (prompt + completion) / duration
  // Uncached prompt tokens per second of TTFT, summed over requests: the rate
  // at which the server prefilled what it had to compute.
  double prefill_tokens_per_s = 0;
  // sum cached_tokens / sum prompt_tokens; -1 when no response reported
  // cached_tokens (the server does not expose it).
  double prefix_cache_hit_rate = -1;
  // Milliseconds.
  Distribution ttft_ms;
  Distribution tpot_ms;  // per request: (e2e - ttft) / (completion_tokens - 1), when > 1 token
  Distribution itl_ms;   // every gap of every request, pooled
  Distribution e2e_ms;
};

BenchSummary Summarize(const std::vector<RequestRecord>& records, double duration_s);

}  // namespace omni::loadgen
