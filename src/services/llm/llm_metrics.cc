#include "services/llm/llm_metrics.h"

#include <algorithm>

namespace omni::llm {
namespace {

void AddDelta(Counter& c, int64_t now, int64_t before) {
  if (now > before) c.Inc(static_cast<double>(now - before));
}

}  // namespace

LlmMetrics::LlmMetrics(MetricsRegistry& r, const std::string& model_name)
    : model_name_(model_name),
      cache_config_(r.AddGauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig.",
                               {"block_size", "num_gpu_blocks"})),
      running_(r.AddGauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                          {"model_name"})
                   .WithLabels({model_name})),
      waiting_(r.AddGauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                          {"model_name"})
                   .WithLabels({model_name})),
      kv_usage_(r.AddGauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", {"model_name"})
                    .WithLabels({model_name})),
      prefix_queries_(r.AddCounter("vllm:prefix_cache_queries_total",
                                   "Prefix cache queries, in terms of number of queried tokens.", {"model_name"})
                          .WithLabels({model_name})),
      prefix_hits_(r.AddCounter("vllm:prefix_cache_hits_total",
                                "Prefix cache hits, in terms of number of cached tokens.", {"model_name"})
                       .WithLabels({model_name})),
      prompt_tokens_(r.AddCounter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", {"model_name"})
                         .WithLabels({model_name})),
      generation_tokens_(r.AddCounter("vllm:generation_tokens_total", "Number of generation tokens processed.",
                                      {"model_name"})
                             .WithLabels({model_name})),
      preemptions_(r.AddCounter("vllm:num_preemptions_total", "Cumulative number of preemptions.", {"model_name"})
                       .WithLabels({model_name})),
      ttft_(r.AddHistogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                           {"model_name"}, DefaultLatencyBuckets())
                .WithLabels({model_name})),
      itl_(r.AddHistogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                          {"model_name"}, DefaultLatencyBuckets())
               .WithLabels({model_name})),
      e2e_(r.AddHistogram("vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.",
                          {"model_name"}, DefaultLatencyBuckets())
               .WithLabels({model_name})),
      success_(r.AddCounter("vllm:request_success_total", "Count of finished requests.",
                            {"model_name", "finished_reason"})),
      client_gone_(r.AddCounter("omni_llm_client_disconnects_total",
                                "Requests cancelled because the client went away before the end; their KV blocks "
                                "are freed at the next engine step.",
                                {"model_name"})
                       .WithLabels({model_name})) {}

void LlmMetrics::SetCacheConfig(int num_blocks) {
  cache_config_.WithLabels({"16", std::to_string(num_blocks)}).Set(1);
}

void LlmMetrics::UpdateFromEngine(const EngineMetrics& m) {
  std::lock_guard lock(mu_);
  running_.Set(m.num_running);
  waiting_.Set(m.num_waiting);
  kv_usage_.Set(m.kv_cache_usage);
  AddDelta(prefix_queries_, m.prefix_cache_queries, last_.prefix_cache_queries);
  AddDelta(prefix_hits_, m.prefix_cache_hits, last_.prefix_cache_hits);
  AddDelta(prompt_tokens_, m.prompt_tokens_total, last_.prompt_tokens_total);
  AddDelta(generation_tokens_, m.generation_tokens_total, last_.generation_tokens_total);
  AddDelta(preemptions_, m.num_preemptions_total, last_.num_preemptions_total);
  last_.prefix_cache_queries = std::max(last_.prefix_cache_queries, m.prefix_cache_queries);
  last_.prefix_cache_hits = std::max(last_.prefix_cache_hits, m.prefix_cache_hits);
  last_.prompt_tokens_total = std::max(last_.prompt_tokens_total, m.prompt_tokens_total);
  last_.generation_tokens_total = std::max(last_.generation_tokens_total, m.generation_tokens_total);
  last_.num_preemptions_total = std::max(last_.num_preemptions_total, m.num_preemptions_total);
}

void LlmMetrics::ObserveRequest(double e2e_seconds, std::string_view finish_reason) {
  e2e_.Observe(e2e_seconds);
  success_.WithLabels({model_name_, std::string(finish_reason)}).Inc();
}

}  // namespace omni::llm
