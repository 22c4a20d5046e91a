// The LLM server's Prometheus metrics under vLLM's names (spec/routing.md),
// so routers and dashboards built for vLLM read omniserve unchanged.
// Engine totals are cumulative snapshots; UpdateFromEngine turns them into
// counter increments.
//
// Thread-safety: thread-safe.
#pragma once

#include <mutex>
#include <string>

#include "engine/engine_core.h"
#include "net/metrics.h"

namespace omni::llm {

class LlmMetrics {
 public:
  LlmMetrics(MetricsRegistry& registry, const std::string& model_name);

  // vllm:cache_config_info{block_size="16",num_gpu_blocks="N"} 1, once loaded.
  void SetCacheConfig(int num_blocks);
  void UpdateFromEngine(const EngineMetrics& m);
  void ObserveTimeToFirstToken(double seconds) { ttft_.Observe(seconds); }
  void ObserveInterTokenLatency(double seconds) { itl_.Observe(seconds); }
  void ObserveRequest(double e2e_seconds, std::string_view finish_reason);
  // omni_llm_client_disconnects_total: a request cancelled because its client went away.
  void ObserveClientGone() { client_gone_.Inc(); }

 private:
  std::string model_name_;
  GaugeFamily& cache_config_;
  Gauge& running_;
  Gauge& waiting_;
  Gauge& kv_usage_;
  Counter& prefix_queries_;
  Counter& prefix_hits_;
  Counter& prompt_tokens_;
  Counter& generation_tokens_;
  Counter& preemptions_;
  Histogram& ttft_;
  Histogram& itl_;
  Histogram& e2e_;
  CounterFamily& success_;
  Counter& client_gone_;

  std::mutex mu_;
  EngineMetrics last_;  // guarded by mu_: the snapshot already counted
};

}  // namespace omni::llm
