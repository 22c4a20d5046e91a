// What the router knows about one endpoint at pick time: a plain snapshot,
// so filters, scorers and pickers are pure functions over a span of these.
#pragma once

#include <cstdint>
#include <string>

namespace omni::gateway {

struct EndpointSnapshot {
  std::string address;  // "host:port"
  bool healthy = true;  // active health checks and proxy failures decide this
  // Scraped from the endpoint's /metrics (vLLM names, spec/routing.md).
  bool has_metrics = false;
  double metrics_age_ms = 0;  // since the last successful scrape
  double waiting = 0;         // vllm:num_requests_waiting
  double running = 0;         // vllm:num_requests_running
  double kv_usage = 0;        // vllm:kv_cache_usage_perc, 0..1
  int64_t num_blocks = 0;     // from vllm:cache_config_info; 0 when unknown
  int64_t block_size = 16;    // tokens per KV block, from the same series
  // Kept by the gateway itself and updated at pick time, so a burst that
  // arrives between two scrapes still spreads out.
  int in_flight = 0;            // proxied requests not yet finished
  int picks_since_scrape = 0;   // requests sent after the metrics were read
  // Prompt tokens (the KV they hold) of requests picked minus those finished
  // since the metrics were read: kv_usage moves with them until the next
  // scrape (KvCacheUtilizationScores).
  double kv_tokens_since_scrape = 0;
};

}  // namespace omni::gateway
