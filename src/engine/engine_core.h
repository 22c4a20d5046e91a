// EngineCore: the single-threaded heart of the LLM engine. Each Step():
// schedule -> ModelRunner::Step -> sample -> append tokens -> check stop
// conditions -> emit outputs -> release the blocks of finished sequences
// (their full blocks stay in the prefix cache).
//
// Engine (engine.h) runs an EngineCore on its own thread; tests and the
// offline `generate` command can drive one directly.
//
// Thread-safety: none; engine thread only, except ValidateRequest, which
// reads immutable configuration and may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/model_runner.h"
#include "engine/prefix_cache.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/token_constraint.h"

namespace omni {

struct EngineConfig {
  int num_kv_blocks = 0;   // see NumBlocksForBudget
  int max_model_len = 0;   // prompt + output tokens; <= num_kv_blocks * kBlockSize
  int max_num_batched_tokens = 2048;
  int max_num_seqs = 256;
  bool enable_prefix_caching = true;
  std::optional<int32_t> eos_token_id;
  // Requests without a seed get SplitMix(default_seed, arrival number), so an
  // engine run is reproducible end to end; a server may seed this randomly.
  uint64_t default_seed = 0;

  Status Validate() const;
};

struct EngineRequest {
  std::string request_id;  // unique among unfinished requests
  std::vector<int32_t> prompt_token_ids;
  std::vector<MediaSpan> media;  // sorted by start, inside the prompt, not overlapping
  SamplingParams sampling;
  std::string cache_salt;  // requests with different salts never share cached blocks
  // Structured output: what may be sampled next (null: anything).
  std::unique_ptr<TokenConstraint> constraint;
};

// One output event of a request: a new token, or only the finish (cancelled
// before a token, or a model error).
struct TokenOutput {
  std::string request_id;
  std::optional<SampledToken> token;
  FinishReason finish_reason = FinishReason::kNone;  // kNone while unfinished
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;  // prefix-cache hit (usage.prompt_tokens_details.cached_tokens)
  int32_t num_output_tokens = 0;  // including this token
};

// Called on the engine thread, once per event, in order; must not block.
// The last call for a request has finish_reason != kNone.
using OutputCallback = std::function<void(const TokenOutput&)>;

struct EngineMetrics {
  int num_running = 0;
  int num_waiting = 0;
  double kv_cache_usage = 0;  // [0, 1]
  int num_blocks = 0;
  int block_size = kBlockSize;
  int64_t prefix_cache_queries = 0;  // tokens
  int64_t prefix_cache_hits = 0;     // tokens
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t num_preemptions_total = 0;
  int64_t num_steps = 0;
};

class EngineCore {
 public:
  // `sink` (may be null) must outlive the core.
  static StatusOr<std::unique_ptr<EngineCore>> Create(const EngineConfig& config,
                                                      std::unique_ptr<ModelRunner> runner,
                                                      KvEventSink* sink);

  // Checks sampling parameters, token ids and lengths; InvalidArgument naming the field.
  Status ValidateRequest(const EngineRequest& request) const;
  // Validates and queues; AlreadyExists if the id is in use.
  Status AddRequest(EngineRequest&& request, OutputCallback on_output);
  // AddRequest without the ValidateRequest a caller already made.
  Status AddValidatedRequest(EngineRequest&& request, OutputCallback on_output);
  // Finishes an unfinished request now (cancellation, or a stop string the
  // caller found), releasing its blocks and emitting its final output.
  // False if unknown or already finished.
  bool FinishRequest(std::string_view request_id, FinishReason reason);
  // Finishes every request with kAbort (shutdown).
  void AbortAll();

  bool HasWork() const { return scheduler_.HasUnfinished(); }
  // One iteration. A ModelRunner error finishes the step's sequences with
  // kError and is returned; the core stays usable.
  Status Step();

  EngineMetrics Metrics() const;
  const PrefixCache& prefix_cache() const { return cache_; }
  const Scheduler& scheduler() const { return scheduler_; }
  const EngineConfig& config() const { return config_; }

 private:
  EngineCore(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, KvEventSink* sink);

  StepBatch BuildBatch(const SchedulerOutput& sched) const;
  void ProcessLogits(const SchedulerOutput& sched, const Tensor& logits);
  // Appends a sampled token and finishes the sequence if a stop condition holds.
  void AppendToken(Sequence* seq, SampledToken&& token);
  void Emit(const Sequence& seq, std::optional<SampledToken> token);
  void ReapFinished();

  EngineConfig config_;
  std::unique_ptr<ModelRunner> runner_;
  int vocab_size_;
  PrefixCache cache_;
  Scheduler scheduler_;
  std::unordered_map<uint64_t, OutputCallback> callbacks_;  // by seq_id
  std::unordered_map<std::string, uint64_t> active_ids_;    // request_id -> seq_id
  uint64_t next_seq_id_ = 0;
  int64_t prompt_tokens_total_ = 0;
  int64_t generation_tokens_total_ = 0;
  int64_t num_steps_ = 0;
};

}  // namespace omni
