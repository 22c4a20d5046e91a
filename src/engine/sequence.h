// Sequence: one request's token state and KV state inside the engine. Owned
// by the Scheduler. Request plumbing (callbacks, sockets) lives elsewhere.
//
// Thread-safety: none; engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/block_pool.h"
#include "engine/media_span.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace omni {

enum class FinishReason {
  kNone,    // still running
  kStop,    // EOS, a stop token id, or the caller's stop string
  kLength,  // max_tokens or max_model_len
  kAbort,   // cancelled (client went away) or engine shutdown
  kError,   // the model runner failed
};
// OpenAI spelling: "stop", "length", "abort", "error"; "" for kNone.
std::string_view FinishReasonName(FinishReason reason);

enum class SequenceState { kWaiting, kRunning, kFinished };

struct Sequence {
  // Request data, fixed at submission.
  uint64_t seq_id = 0;  // engine-assigned, also the FCFS arrival order
  std::string request_id;
  int32_t num_prompt_tokens = 0;
  std::vector<MediaSpan> media;
  std::string cache_salt;
  SamplingParams params;
  uint64_t seed = 0;              // params.seed or one the engine chose
  int32_t max_total_tokens = 0;   // prompt + output cap (max_tokens, max_model_len)
  std::unique_ptr<TokenConstraint> constraint;  // null: unconstrained

  // Prompt followed by the generated tokens.
  std::vector<int32_t> tokens;

  // KV state. After a preemption everything but block_hashes resets (the
  // hashes depend on tokens only).
  std::vector<BlockId> block_table;
  std::vector<BlockHash> block_hashes;  // one per full block of `tokens`
  int32_t num_computed_tokens = 0;      // tokens whose KV is in block_table
  int32_t num_committed_blocks = 0;     // leading blocks registered in the prefix cache

  int32_t num_cached_tokens = 0;  // prefix-cache hit at the first admission
  int32_t num_preemptions = 0;
  SequenceState state = SequenceState::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const int32_t> prompt() const { return {tokens.data(), static_cast<size_t>(num_prompt_tokens)}; }
  std::span<const int32_t> output() const {
    return std::span<const int32_t>(tokens).subspan(num_prompt_tokens);
  }
};

}  // namespace omni
