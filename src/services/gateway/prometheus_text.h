// A parser for the Prometheus text exposition format 0.0.4, for the gateway's
// scrape of each endpoint's /metrics (about every 50 ms, a few KB each), and
// the extraction of the load signals the router reads (spec/routing.md).
//
// Accepted, as the format defines it:
//
//   # HELP / # TYPE lines and other comments: skipped (not validated)
//   name{label="value",...} value [timestamp_ms]
//
// - names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*;
//   blanks (spaces, tabs) separate the tokens and may surround the label
//   tokens; a trailing comma in the label set is allowed; `{}` is no labels.
// - label values escape \\, \" and \n; any other escape is an error.
// - values as Go's ParseFloat writes them: decimals with exponents, a
//   leading sign, and NaN / Inf / +Inf / -Inf (case-insensitive, also
//   "Infinity"). Timestamps are optional integers (milliseconds).
// - lines end in "\n"; a "\r" before it is dropped; blank lines are skipped.
//
// A malformed line is InvalidArgument naming the 1-based line and what was
// wrong ("line 7: expected '=' after label name \"model_name\""); duplicate
// label names in one sample are rejected as Prometheus does. Hand-written
// scanner, no regex: a 10 KB page takes tens of microseconds. Pure and
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace omni {

struct PromSample {
  std::string name;                                         // histogram series keep _bucket/_sum/_count
  std::vector<std::pair<std::string, std::string>> labels;  // in written order, values unescaped
  double value = 0;
  std::optional<int64_t> timestamp_ms;

  // The value of label `name`, or nullptr.
  const std::string* Label(std::string_view name) const;
};

StatusOr<std::vector<PromSample>> ParsePrometheusText(std::string_view text);

// What the router reads from a vLLM-compatible server (omniserve llm, vLLM).
// A field is empty when the page has no usable sample for it.
struct VllmLoadMetrics {
  std::optional<double> num_requests_waiting;
  std::optional<double> num_requests_running;
  std::optional<double> kv_cache_usage_perc;  // 0..1
  std::optional<int64_t> num_gpu_blocks;
  std::optional<int64_t> block_size;  // tokens per KV block
  std::optional<double> prefix_cache_queries_total;  // tokens
  std::optional<double> prefix_cache_hits_total;     // tokens
};

// Reads the vllm:* samples:
// - queue lengths and prefix-cache counters are summed over their label sets
//   (a server serving several model names reports one series per name);
// - kv_cache_usage_perc takes the maximum instead: each series is a fraction
//   of its own pool, so a sum could pass 1, and the fullest pool is what
//   saturates;
// - block info comes from the labels of `vllm:cache_config_info{block_size=,
//   num_gpu_blocks=} 1`; among several such series the last with a nonzero
//   value wins, and a label that is not an integer (vLLM writes "None"
//   before profiling) leaves its field empty;
// - older vLLM names are read when the current one is absent:
//   vllm:gpu_cache_usage_perc, vllm:gpu_prefix_cache_{queries,hits}_total;
// - NaN and infinite values are ignored, as if the sample were missing.
VllmLoadMetrics ExtractVllmLoadMetrics(std::span<const PromSample> samples);

}  // namespace omni
