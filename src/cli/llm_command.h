// `omniserve llm --model DIR --port P ...`: the OpenAI-compatible LLM server
// (docs/LLM_SERVER.md). The server listens first and loads the model on a
// thread, so /health answers 503 while loading.
#pragma once

#include <cstdint>
#include <string>

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
  int64_t embedding_cache_bytes = 512ll << 20;
  std::string kv_events;
  int64_t seed = 0;
  int threads = 0;  // compute threads; 0: OMP_NUM_THREADS, else every core
};

CLI::App* AddLlmCommand(CLI::App& app, LlmFlags* flags);
int RunLlmCommand(const LlmFlags& flags);

}  // namespace omni::cli
