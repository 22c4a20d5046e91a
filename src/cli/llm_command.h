// `omniserve llm --model DIR --port P ...`: the OpenAI-compatible LLM server
// (docs/LLM_SERVER.md). The server listens first and loads the model on a
// thread, so /health answers 503 while loading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace omni::cli {

struct LlmFlags {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string served_model_name;
  int64_t kv_cache_memory = 256ll << 20;
  int num_kv_blocks = 0;
  int max_model_len = 0;
  int max_num_batched_tokens = 2048;
  int max_num_seqs = 256;
  bool no_prefix_caching = false;
  std::string store;
  // http:// media fetches (storage/fetch_policy.h): loopback, private and
  // other internal addresses are refused unless allowed here.
  bool fetch_allow_loopback = false;
  bool fetch_allow_private = false;
  std::vector<std::string> fetch_allow;  // CIDRs allowed whatever their kind
  std::string fetch_ca_file;             // https: CAs to verify servers against; empty: the system's
  int fetch_timeout_ms = 30'000;
  int64_t fetch_max_bytes = 512ll << 20;
  int64_t embedding_cache_bytes = 512ll << 20;
  std::string kv_events;
  int64_t seed = 0;
  int threads = 0;  // compute threads; 0: OMP_NUM_THREADS, else every core
  int max_pending_requests = 4096;   // generation requests held at once; more get 429
  int64_t max_inflight_body_bytes = 256ll << 20;  // request bodies buffered at once; more get 503
  int drain_timeout_ms = 30'000;     // SIGTERM: how long running requests may finish
};

CLI::App* AddLlmCommand(CLI::App& app, LlmFlags* flags);
int RunLlmCommand(const LlmFlags& flags);

}  // namespace omni::cli
