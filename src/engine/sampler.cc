#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ops/elementwise.h"

namespace omni {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

Status FieldError(const char* field, const std::string& rule) {
  return InvalidArgument(std::string(field) + " " + rule).WithParam(field);
}

bool InRange(float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; }

int32_t Argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Indices sorted by logit, highest first; ties by lower id.
std::vector<int32_t> SortedIndices(std::span<const float> logits) {
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  return idx;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void FillLogprobs(std::span<const float> raw_logits, const SamplingParams& params, SampledToken* out) {
  if (!params.logprobs && params.top_logprobs == 0) return;
  const std::vector<float> lp = LogSoftmax(raw_logits);
  out->logprob = lp[out->token_id];
  const int k = std::min<int>(params.top_logprobs, static_cast<int>(lp.size()));
  if (k == 0) return;
  std::vector<int32_t> idx(lp.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
    return lp[a] > lp[b] || (lp[a] == lp[b] && a < b);
  });
  for (int i = 0; i < k; ++i) out->top_logprobs.push_back({idx[i], lp[idx[i]]});
}

}  // namespace

Status SamplingParams::Validate() const {
  if (!InRange(temperature, 0.0f, 2.0f)) return FieldError("temperature", "must be in [0, 2]");
  if (!(std::isfinite(top_p) && top_p > 0.0f && top_p <= 1.0f)) {
    return FieldError("top_p", "must be in (0, 1]");
  }
  if (top_k != -1 && top_k < 1) return FieldError("top_k", "must be -1 (disabled) or >= 1");
  if (!InRange(min_p, 0.0f, 1.0f)) return FieldError("min_p", "must be in [0, 1]");
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    return FieldError("repetition_penalty", "must be > 0");
  }
  if (!InRange(presence_penalty, -2.0f, 2.0f)) {
    return FieldError("presence_penalty", "must be in [-2, 2]");
  }
  if (!InRange(frequency_penalty, -2.0f, 2.0f)) {
    return FieldError("frequency_penalty", "must be in [-2, 2]");
  }
  if (n < 1) return FieldError("n", "must be >= 1");
  if (max_tokens < 1) return FieldError("max_tokens", "must be >= 1");
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return FieldError("top_logprobs", "must be in [0, 20]");
  }
  for (int32_t id : stop_token_ids) {
    if (id < 0) return FieldError("stop_token_ids", "must be non-negative token ids");
  }
  if (min_tokens < 0 || min_tokens > max_tokens) return FieldError("min_tokens", "must be in [0, max_tokens]");
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return FieldError("logit_bias", "keys must be non-negative token ids");
    if (!InRange(bias, -100.0f, 100.0f)) return FieldError("logit_bias", "values must be in [-100, 100]");
  }
  return Status::Ok();
}

void ApplyRepetitionPenalty(std::span<float> logits, float penalty, const SamplingHistory& history) {
  if (penalty == 1.0f) return;
  std::unordered_set<int32_t> seen(history.prompt_tokens.begin(), history.prompt_tokens.end());
  seen.insert(history.output_tokens.begin(), history.output_tokens.end());
  for (int32_t t : seen) {
    if (t < 0 || static_cast<size_t>(t) >= logits.size()) continue;
    float& l = logits[t];
    l = l > 0 ? l / penalty : l * penalty;
  }
}

void ApplyPresenceFrequencyPenalties(std::span<float> logits, float presence, float frequency,
                                     std::span<const int32_t> output_tokens) {
  if (presence == 0.0f && frequency == 0.0f) return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t t : output_tokens) ++counts[t];
  for (const auto& [t, c] : counts) {
    if (t < 0 || static_cast<size_t>(t) >= logits.size()) continue;
    logits[t] -= presence + frequency * static_cast<float>(c);
  }
}

void ApplyTopK(std::span<float> logits, int k) {
  if (k < 1 || static_cast<size_t>(k) >= logits.size()) return;
  std::vector<float> sorted(logits.begin(), logits.end());
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<float>());
  const float kth = sorted[k - 1];
  for (float& l : logits) {
    if (l < kth) l = kNegInf;
  }
}

void ApplyTopP(std::span<float> logits, float p) {
  if (p >= 1.0f) return;
  const std::vector<int32_t> order = SortedIndices(logits);
  const float max_logit = logits[order[0]];
  double total = 0;
  for (float l : logits) total += std::exp(static_cast<double>(l - max_logit));
  double cumulative = 0;
  for (int32_t id : order) {
    // Keep this token only while the mass before it is still short of p.
    if (cumulative >= static_cast<double>(p) * total) {
      logits[id] = kNegInf;
    } else {
      cumulative += std::exp(static_cast<double>(logits[id] - max_logit));
    }
  }
}

void ApplyMinP(std::span<float> logits, float p) {
  if (p <= 0.0f) return;
  const float max_logit = logits[Argmax(logits)];
  // prob_i >= p * prob_max  <=>  logit_i >= max_logit + log(p)
  const float threshold = max_logit + std::log(p);
  for (float& l : logits) {
    if (l < threshold) l = kNegInf;
  }
}

std::vector<float> LogSoftmax(std::span<const float> logits) {
  const float max_logit = logits[Argmax(logits)];
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  const double log_z = static_cast<double>(max_logit) + std::log(sum);
  std::vector<float> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<float>(logits[i] - log_z);
  return out;
}

double SeededUniform(uint64_t seed, uint64_t index) {
  const uint64_t bits = SplitMix64(SplitMix64(seed) ^ SplitMix64(index + 0x632BE59BD9B4E019ull));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;  // 53 random mantissa bits
}

void ApplyMask(std::span<float> logits, const TokenMask& mask) {
  const int32_t vocab = static_cast<int32_t>(logits.size());
  if (!mask.allowed.empty()) {
    int32_t next = 0;  // first id not yet visited
    for (const TokenRange& r : mask.allowed) {
      const int32_t begin = std::clamp(r.begin, next, vocab), end = std::clamp(r.end, begin, vocab);
      std::fill(logits.begin() + next, logits.begin() + begin, kNegInf);
      next = end;
    }
    std::fill(logits.begin() + next, logits.end(), kNegInf);
  }
  if (mask.banned.empty()) return;
  bool any_left = false;
  for (int32_t i = 0; i < vocab && !any_left; ++i) {
    any_left = logits[i] != kNegInf && std::find(mask.banned.begin(), mask.banned.end(), i) == mask.banned.end();
  }
  if (!any_left) return;
  for (int32_t id : mask.banned) {
    if (id >= 0 && id < vocab) logits[id] = kNegInf;
  }
}

SampledToken SampleToken(std::span<const float> logits, const SamplingParams& params,
                         const SamplingHistory& history, uint64_t seed, const TokenMask& mask) {
  OMNI_CHECK(!logits.empty());
  const int32_t vocab = static_cast<int32_t>(logits.size());
  if (mask.allowed.size() == 1 && mask.allowed[0].end == mask.allowed[0].begin + 1) {
    SampledToken forced;
    forced.token_id = mask.allowed[0].begin;
    FillLogprobs(logits, params, &forced);
    return forced;
  }
  std::vector<float> work(logits.begin(), logits.end());
  for (const auto& [id, bias] : params.logit_bias) {
    if (id < vocab) work[id] += bias;
  }
  ApplyMask(work, mask);
  ApplyRepetitionPenalty(work, params.repetition_penalty, history);
  ApplyPresenceFrequencyPenalties(work, params.presence_penalty, params.frequency_penalty,
                                  history.output_tokens);
  SampledToken out;
  if (params.greedy()) {
    out.token_id = Argmax(work);
  } else {
    for (float& l : work) l /= params.temperature;
    ApplyTopK(work, params.top_k);
    ApplyTopP(work, params.top_p);
    ApplyMinP(work, params.min_p);
    // Inverse-CDF draw over the unnormalized weights e^(l - max), kept in
    // `work` (a whole vocabulary per row per step, so the exp is vectorized;
    // scalar expf was a tenth of a 16-sequence decode step). Weights below
    // e^-87 are 0: a float cannot hold them anyway.
    const double total = ops::ExpShiftedInPlace(work, work[Argmax(work)]);
    const double target = SeededUniform(seed, history.output_tokens.size()) * total;
    int32_t chosen = -1;
    double cumulative = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      if (work[i] == 0.0f) continue;
      chosen = static_cast<int32_t>(i);  // rounding can leave target at total: the last token with mass
      cumulative += work[i];
      if (cumulative > target) break;
    }
    OMNI_CHECK_GE(chosen, 0);  // the argmax always has weight 1
    out.token_id = chosen;
  }
  FillLogprobs(logits, params, &out);
  return out;
}

}  // namespace omni
