// Sampling: typed, validated parameters and a pure per-row sampler.
//
// Processing order for one row of logits (each step optional):
//   0. logit_bias added; then the mask: ids outside the allowed ranges (a
//      TokenConstraint's) and banned ids (EOS and stop ids before min_tokens)
//      to -inf. A ban that would leave nothing allowed is ignored.
//   1. repetition penalty (HF: positive logits / p, negative * p, for every
//      token seen in prompt + output)
//   2. presence and frequency penalties (OpenAI: logit -= presence * [count > 0]
//      + frequency * count, counts over output tokens only)
//   3. temperature 0: argmax (lowest id on ties), done
//   4. divide by temperature, then top-k, top-p, min-p masks (to -inf)
//   5. softmax and one draw from the request's RNG
//
// Logprobs are those of the RAW model distribution (log-softmax of the
// logits before any penalty, temperature or mask), like vLLM's default
// (logprobs_mode=raw_logprobs); the chosen token's logprob is reported even
// when a mask made another token more likely.
//
// Seeds: the draw for output token i of a request is a pure function of
// (seed, i), so results do not depend on batch composition, batch position or
// preemption. Requests without a seed get one from the engine.
//
// Thread-safety: all functions are pure; SamplingParams is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/token_constraint.h"

namespace omni {

inline constexpr int kMaxTopLogprobs = 20;

struct SamplingParams {
  float temperature = 1.0f;  // [0, 2]; 0 is greedy
  float top_p = 1.0f;        // (0, 1]
  int top_k = -1;            // -1 (off) or >= 1
  float min_p = 0.0f;        // [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 is off
  float presence_penalty = 0.0f;    // [-2, 2]
  float frequency_penalty = 0.0f;   // [-2, 2]
  std::optional<uint64_t> seed;
  // Choices per prompt. The engine samples one sequence per request; the
  // caller submits n requests sharing the prompt (prefix caching shares the KV).
  int n = 1;
  int max_tokens = 16;  // >= 1; the engine also stops at its max_model_len
  int min_tokens = 0;   // [0, max_tokens]: EOS and stop_token_ids are banned before this many
  // OpenAI logit_bias: added to the token's logit before anything else;
  // each bias in [-100, 100], ids checked against the vocabulary by the engine.
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool logprobs = false;  // report the chosen token's logprob
  int top_logprobs = 0;   // [0, 20]; > 0 implies logprobs

  // InvalidArgument naming the offending field (also set as the Status param).
  Status Validate() const;
  bool greedy() const { return temperature < kGreedyTemperature; }

  static constexpr float kGreedyTemperature = 1e-5f;
};

struct TokenLogprob {
  int32_t token_id = 0;
  float logprob = 0;
};

struct SampledToken {
  int32_t token_id = 0;
  float logprob = 0;                       // set when params.logprobs or top_logprobs > 0
  std::vector<TokenLogprob> top_logprobs;  // highest first, params.top_logprobs entries
};

// What the penalties look at for one sequence.
struct SamplingHistory {
  std::span<const int32_t> prompt_tokens;
  std::span<const int32_t> output_tokens;
};

// One row, in place. Token ids outside [0, logits.size()) are ignored.
void ApplyRepetitionPenalty(std::span<float> logits, float penalty, const SamplingHistory& history);
void ApplyPresenceFrequencyPenalties(std::span<float> logits, float presence, float frequency,
                                     std::span<const int32_t> output_tokens);
// Keep the k largest (ties at the k-th value are kept too).
void ApplyTopK(std::span<float> logits, int k);
// Keep the smallest highest-probability set whose mass reaches p.
void ApplyTopP(std::span<float> logits, float p);
// Keep tokens with probability >= p * (max probability).
void ApplyMinP(std::span<float> logits, float p);
std::vector<float> LogSoftmax(std::span<const float> logits);
// A uniform double in [0, 1), a pure function of (seed, index).
double SeededUniform(uint64_t seed, uint64_t index);

// Which ids one draw may pick (empty spans: no restriction).
struct TokenMask {
  std::span<const TokenRange> allowed;  // sorted, disjoint; empty: every id
  std::span<const int32_t> banned;
};
// Sets the logits of ids the mask excludes to -inf.
void ApplyMask(std::span<float> logits, const TokenMask& mask);

// Samples the next output token; the draw index is history.output_tokens.size().
// A mask that allows exactly one id picks it without a draw.
SampledToken SampleToken(std::span<const float> logits, const SamplingParams& params,
                         const SamplingHistory& history, uint64_t seed, const TokenMask& mask = {});

}  // namespace omni
