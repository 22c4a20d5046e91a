// LlmService: the socket-free LLM server. Takes typed OpenAI requests
// (openai_types.h), renders and tokenizes prompts, fetches and injects
// embedding objects, runs the engine, and reports generated text as events;
// the HTTP adapter (llm_http.h) only converts JSON and SSE.
//
//   auto svc = LlmService::Create(options);   // cheap; the server can listen
//   svc->Load();                              // tokenizer, weights, KV pool, engine
//   auto prepared = svc->PrepareChat(request);          // 4xx errors happen here
//   svc->StartGenerate(*prepared, sink, done);        // returns at once
//
// Threads: the engine thread runs the model; one output thread turns its
// outputs into events and runs every request's sink and done, so a request
// in flight holds no thread of its own.
// Thread-safety: every method is thread-safe. Generate (the blocking form)
// must not be called from a sink or done, which run on the output thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/engine.h"
#include "net/http_client.h"
#include "net/metrics.h"
#include "services/llm/embedding_fetcher.h"
#include "services/llm/llm_metrics.h"
#include "services/llm/model_runner_adapter.h"
#include "services/llm/output_constraint.h"
#include "services/llm/output_parser.h"
#include "api/openai/openai_types.h"
#include "storage/object_store.h"
#include "text/tokenizer.h"

namespace omni::llm {

// The OpenAI request types the service takes (api/openai/).
using openai::ChatRequest;
using openai::CompletionRequest;
using openai::DetokenizeRequest;
using openai::GenerationOptions;
using openai::MediaPart;
using openai::TokenizeRequest;

struct LlmServiceOptions {
  std::string model_dir;
  std::string served_model_name;  // empty: the folder's name
  int64_t kv_cache_memory_bytes = 256ll << 20;
  int num_kv_blocks = 0;          // > 0 overrides kv_cache_memory_bytes
  int max_model_len = 0;          // 0: min(max_position_embeddings, pool tokens)
  int max_num_batched_tokens = 2048;
  int max_num_seqs = 256;
  bool enable_prefix_caching = true;
  DType kv_dtype = DType::kBF16;
  uint64_t default_seed = 0;
  ObjectStore* store = nullptr;   // --store, for s3:// media; must outlive the service
  std::string store_uri;
  HttpClient* http_client = nullptr;  // for http:// media; must outlive the service
  size_t embedding_cache_bytes = 512u << 20;
  // http:// media: which addresses may be fetched (storage/fetch_policy.h),
  // how long a fetch may take and how large an object may be.
  FetchPolicy fetch_policy;
  std::chrono::milliseconds fetch_timeout{30'000};
  size_t fetch_max_bytes = 512u << 20;
  MetricsRegistry* metrics = nullptr;  // required; must outlive the service
  KvEventSink* kv_events = nullptr;    // optional; must outlive the service
  // Reads the weights in model_dir; empty: LoadHyperClovax. Tests inject a
  // fake model here (the tokenizer still comes from model_dir).
  ModelLoader model_loader;
};

// A request after validation, tokenization and media fetching: ready for the
// engine.
struct PreparedGeneration {
  std::string id;     // "chatcmpl-..." or "cmpl-..."; engine ids are id + "-" + choice
  std::string model;  // the served name
  int64_t created = 0;  // unix seconds
  bool chat = false;
  std::vector<int32_t> prompt_ids;
  std::vector<MediaSpan> media;
  SamplingParams sampling;
  std::vector<std::string> stop;
  std::string echo_text;  // completions with echo: the prompt text
  bool stream = false;
  bool include_usage = false;
  std::string cache_salt;
  // Chat only: the output is parsed into reasoning, content and tool calls
  // (output_parser.h) and constrained by `grammar` (output_constraint.h;
  // null: unconstrained). Completions return the raw text.
  bool parse_output = false;
  bool starts_in_reasoning = false;
  bool parse_tool_calls = true;
  bool raw_speech = false;  // force_audio: the spoken block stays content, tags and units as generated
  std::shared_ptr<const std::vector<openai::ToolSpec>> tools;
  std::shared_ptr<const OutputGrammar> grammar;
};

struct TopLogprob {
  std::string token;
  float logprob = 0;
};
struct LogprobEntry {
  int32_t token_id = 0;
  std::string token;  // the token's text
  float logprob = 0;
  std::vector<TopLogprob> top;
};

struct GenerationEvent {
  enum class Kind { kDelta, kFinish };
  Kind kind = Kind::kDelta;
  int choice = 0;
  std::string text;                    // kDelta: new text (chat: content; may be empty when only logprobs came)
  std::string reasoning;               // kDelta, chat: new reasoning text
  std::vector<ToolCallDelta> tool_calls;  // kDelta, chat
  std::vector<LogprobEntry> logprobs;  // kDelta: one per token covered
  std::string finish_reason;           // kFinish: "stop", "length", "tool_calls", "abort", "error"
  std::vector<ParsedToolCall> calls;   // kFinish, chat: the complete tool calls
  bool has_reasoning = false;          // kFinish, chat: the output had a thought
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
};

// One choice of a non-streamed answer, collected from GenerationEvents.
struct ChoiceResult {
  std::string text;  // chat: the content
  std::string reasoning;
  bool has_reasoning = false;
  std::vector<ParsedToolCall> tool_calls;
  std::vector<LogprobEntry> logprobs;
  std::string finish_reason;
};

struct CompletionResult {
  std::vector<ChoiceResult> choices;  // [n]
  Usage usage;
};

// Returns false once the consumer is gone (the request is then cancelled).
using GenerationSink = std::function<bool(const GenerationEvent&)>;
// Called once when a generation has ended: the usage of every choice, or
// the error that kept it from starting.
using GenerationDone = std::function<void(StatusOr<Usage>)>;

struct TokenizeResult {
  std::vector<int32_t> tokens;
  int max_model_len = 0;
};

class LlmService {
 public:
  static StatusOr<std::unique_ptr<LlmService>> Create(LlmServiceOptions options);
  ~LlmService();

  // Loads tokenizer, weights and the engine. Requests before it finishes get
  // Unavailable (503).
  Status Load();
  // OK once loaded; Unavailable while loading or after a failed load.
  Status Ready() const;
  const std::string& served_model_name() const { return served_name_; }

  StatusOr<PreparedGeneration> PrepareChat(const ChatRequest& request);
  StatusOr<PreparedGeneration> PrepareCompletion(const CompletionRequest& request);
  // Starts a prepared request and returns at once: no thread waits for it.
  // `sink` gets each event in order, then `done` runs once; both run on the
  // service's output thread (one for all requests), so they must not block
  // (ResponseWriter::WriteNoWait, not Write). Errors before any choice was
  // submitted (Unavailable after Shutdown) reach `done` too.
  void StartGenerate(PreparedGeneration request, GenerationSink sink, GenerationDone done);
  // StartGenerate, waiting for the end; `sink` runs on the output thread.
  // The usage counts every choice. For callers with a thread to spare
  // (offline generation, tests).
  StatusOr<Usage> Generate(const PreparedGeneration& request, const GenerationSink& sink);
  // StartGenerate() collected into whole choices, for non-streamed answers;
  // `done` runs once on the output thread. `client_present` is asked at each
  // event; false cancels the request. A choice that ended in "error" or
  // "abort" makes the whole answer an error (Internal / Unavailable), as a
  // partial answer must not look complete.
  using CompletionDone = std::function<void(StatusOr<CompletionResult>)>;
  void StartComplete(PreparedGeneration request, std::function<bool()> client_present, CompletionDone done);
  // Cancels a request being generated (client disconnect): its blocks are
  // freed at the engine's next iteration. No-op if it already finished.
  void Cancel(const PreparedGeneration& request);

  StatusOr<TokenizeResult> Tokenize(const TokenizeRequest& request);
  StatusOr<std::string> Detokenize(const DetokenizeRequest& request);

  // Refreshes the engine gauges and counters in the registry.
  void UpdateEngineMetrics();
  // Stops the engine: unfinished requests end with "abort", their events
  // and `done` delivered before this returns. New requests get Unavailable.
  void Shutdown();

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  EngineMetrics engine_metrics() const;
  int max_model_len() const { return max_model_len_; }
  int num_kv_blocks() const { return num_kv_blocks_; }

 private:
  explicit LlmService(LlmServiceOptions options);
  Status CheckModel(const std::string& model) const;
  // Prompt length and max_tokens against the context (in OpenAI's words),
  // and the options into `out`.
  Status FinishPrepare(const GenerationOptions& options, PreparedGeneration* out) const;
  // The engine's validation of the prepared request, once.
  Status ValidateOnce(PreparedGeneration* out) const;
  std::string NewId(std::string_view prefix);
  struct Run;
  // Submits every choice of `run`; on the output thread.
  void SubmitRun(const std::shared_ptr<Run>& run);
  // One engine output of choice `choice`; on the output thread.
  void HandleOutput(Run& run, int choice, const TokenOutput& out);

  LlmServiceOptions options_;
  std::string served_name_;
  std::unique_ptr<EmbeddingFetcher> fetcher_;
  std::unique_ptr<LlmMetrics> metrics_;

  // Set by Load before loaded_ turns true; read-only afterwards.
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<LoadedModel> model_;
  std::unique_ptr<Engine> engine_;
  // The output thread: turns engine outputs into events (detokenizing,
  // stop strings) and runs sinks, off the engine thread and in order.
  std::unique_ptr<ThreadPool> output_;
  std::vector<int32_t> chat_stop_ids_;  // <|im_end|>, <|endoftext|>
  std::shared_ptr<const OmniGrammarTokens> grammar_tokens_;
  std::vector<int32_t> output_tag_ids_;  // sorted: the model-written Omni tags (omni_tokens.h)
  int max_model_len_ = 0;
  int num_kv_blocks_ = 0;
  std::atomic<bool> loaded_{false};
  std::atomic<bool> load_failed_{false};
  std::atomic<uint64_t> next_id_{0};
};

}  // namespace omni::llm
