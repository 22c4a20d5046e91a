#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <set>

namespace omni {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Logits whose softmax is exactly `probs`.
std::vector<float> LogitsFor(const std::vector<float>& probs) {
  std::vector<float> l;
  for (float p : probs) l.push_back(std::log(p));
  return l;
}

TEST(SamplerTest, GreedyIsArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  const std::vector<float> logits = {1, 3, 3, 2};
  EXPECT_EQ(SampleToken(logits, p, {}, 1).token_id, 1);
}

TEST(SamplerTest, TopKKeepsTheKLargest) {
  std::vector<float> l = {1, 4, 2, 3};
  ApplyTopK(l, 2);
  EXPECT_EQ(l, (std::vector<float>{-kInf, 4, -kInf, 3}));
  std::vector<float> all = {1, 2};
  ApplyTopK(all, 5);  // k >= vocab: no-op
  EXPECT_EQ(all, (std::vector<float>{1, 2}));
}

TEST(SamplerTest, TopPKeepsSmallestSetReachingP) {
  std::vector<float> l = LogitsFor({0.15f, 0.5f, 0.05f, 0.3f});
  ApplyTopP(l, 0.75f);  // 0.5, then 0.3 (mass before it 0.5 < 0.75); then 0.8 >= 0.75
  EXPECT_TRUE(std::isfinite(l[1]));
  EXPECT_TRUE(std::isfinite(l[3]));
  EXPECT_EQ(l[0], -kInf);
  EXPECT_EQ(l[2], -kInf);
  std::vector<float> one = LogitsFor({0.15f, 0.5f, 0.05f, 0.3f});
  ApplyTopP(one, 0.45f);
  EXPECT_TRUE(std::isfinite(one[1]));
  EXPECT_EQ(one[0], -kInf);
  EXPECT_EQ(one[3], -kInf);
}

TEST(SamplerTest, MinPRelativeToMaxProbability) {
  std::vector<float> l = LogitsFor({0.5f, 0.3f, 0.15f, 0.05f});
  ApplyMinP(l, 0.2f);  // threshold 0.2 * 0.5 = 0.1
  EXPECT_TRUE(std::isfinite(l[0]));
  EXPECT_TRUE(std::isfinite(l[1]));
  EXPECT_TRUE(std::isfinite(l[2]));
  EXPECT_EQ(l[3], -kInf);
}

TEST(SamplerTest, PenaltiesMatchHandComputedLogits) {
  const std::vector<int32_t> prompt = {0};
  const std::vector<int32_t> output = {1, 1, 3};
  std::vector<float> l = {2, -2, 1, 0.5f};
  ApplyRepetitionPenalty(l, 2.0f, SamplingHistory{prompt, output});
  EXPECT_EQ(l, (std::vector<float>{1, -4, 1, 0.25f}));
  ApplyPresenceFrequencyPenalties(l, 0.5f, 0.25f, output);
  // token 1: -4 - 0.5 - 2 * 0.25; token 3: 0.25 - 0.5 - 0.25; prompt-only token 0 untouched.
  EXPECT_EQ(l, (std::vector<float>{1, -5, 1, -0.5f}));
}

TEST(SamplerTest, PenaltiesSteerGreedy) {
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 2;
  const std::vector<int32_t> output = {0, 0};
  const std::vector<float> logits = {3, 0, 0};
  EXPECT_EQ(SampleToken(logits, p, SamplingHistory{{}, output}, 1).token_id, 1);
}

TEST(SamplerTest, LogprobsAreRawLogSoftmax) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 10;  // changes the choice, not the reported distribution
  p.logprobs = true;
  p.top_logprobs = 3;
  const std::vector<float> logits = {2, 1.5f, 0, -1, 1};
  const std::vector<int32_t> prompt = {0};
  const SampledToken t = SampleToken(logits, p, SamplingHistory{prompt, {}}, 7);
  EXPECT_EQ(t.token_id, 1);
  const std::vector<float> lp = LogSoftmax(logits);
  EXPECT_FLOAT_EQ(t.logprob, lp[1]);
  ASSERT_EQ(t.top_logprobs.size(), 3u);
  EXPECT_EQ(t.top_logprobs[0].token_id, 0);
  EXPECT_EQ(t.top_logprobs[1].token_id, 1);
  EXPECT_EQ(t.top_logprobs[2].token_id, 4);
  double mass = 0;
  for (size_t i = 0; i < t.top_logprobs.size(); ++i) {
    mass += std::exp(t.top_logprobs[i].logprob);
    if (i > 0) {
      EXPECT_GE(t.top_logprobs[i - 1].logprob, t.top_logprobs[i].logprob);
    }
  }
  EXPECT_LE(mass, 1.0 + 1e-6);
  double total = 0;
  for (float v : lp) total += std::exp(v);
  EXPECT_NEAR(total, 1.0, 1e-6);
}

TEST(SamplerTest, SeededDrawsAreReproducibleAndRespectMasks) {
  SamplingParams p;
  p.temperature = 1.0f;
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.25f, 0.15f};
  std::vector<int32_t> output;
  std::vector<int32_t> again;
  std::set<int32_t> seen;
  for (int i = 0; i < 64; ++i) {
    const int32_t a = SampleToken(logits, p, SamplingHistory{{}, output}, 42).token_id;
    const int32_t b = SampleToken(logits, p, SamplingHistory{{}, output}, 42).token_id;
    EXPECT_EQ(a, b);
    seen.insert(a);
    output.push_back(a);
  }
  EXPECT_GT(seen.size(), 2u);  // genuinely random across steps
  // The draw depends on (seed, index) only.
  EXPECT_EQ(SeededUniform(5, 3), SeededUniform(5, 3));
  EXPECT_NE(SeededUniform(5, 3), SeededUniform(6, 3));
  EXPECT_NE(SeededUniform(5, 3), SeededUniform(5, 4));
  p.top_k = 1;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(SampleToken(logits, p, {}, seed).token_id, 2);
  }
  p.top_k = -1;
  p.min_p = 0.99f;  // only the most likely survives
  EXPECT_EQ(SampleToken(logits, p, {}, 3).token_id, 2);
}

// Frequencies over many seeds follow softmax(logits / T): at T = 1 the given
// probabilities, at T = 0.5 their squares renormalized (0.1, 0.2, 0.3, 0.4
// -> 1, 4, 9, 16 over 30). 20000 draws: one standard deviation is at most
// 0.0035, the bound is 0.015.
TEST(SamplerTest, DrawFrequenciesFollowTheTemperedDistribution) {
  const std::vector<float> logits = LogitsFor({0.1f, 0.2f, 0.3f, 0.4f});
  const std::vector<std::pair<float, std::vector<double>>> cases = {
      {1.0f, {0.1, 0.2, 0.3, 0.4}}, {0.5f, {1 / 30.0, 4 / 30.0, 9 / 30.0, 16 / 30.0}}};
  for (const auto& [temperature, expected] : cases) {
    SamplingParams p;
    p.temperature = temperature;
    std::vector<int> counts(4, 0);
    constexpr int kDraws = 20000;
    for (uint64_t seed = 0; seed < kDraws; ++seed) ++counts[SampleToken(logits, p, {}, seed).token_id];
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(counts[i] / static_cast<double>(kDraws), expected[i], 0.015) << "T=" << temperature << " token " << i;
    }
  }
}

TEST(SamplerTest, LogitBiasShiftsTheChoiceButNotTheRawLogprob) {
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = true;
  const std::vector<float> logits = LogitsFor({0.1f, 0.6f, 0.3f});
  p.logit_bias = {{0, 5.0f}};
  const SampledToken t = SampleToken(logits, p, {}, 1);
  EXPECT_EQ(t.token_id, 0);                          // log 0.1 + 5 > log 0.6
  EXPECT_NEAR(t.logprob, std::log(0.1f), 1e-5f);     // the raw distribution
  p.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(SampleToken(logits, p, {}, 1).token_id, 2);
}

TEST(SamplerTest, MaskKeepsOnlyAllowedRangesAndDropsBannedIds) {
  std::vector<float> l = {5, 1, 2, 3, 4, 6};
  const std::vector<TokenRange> allowed = {{1, 3}, {4, 5}};
  ApplyMask(l, TokenMask{allowed, {}});
  EXPECT_EQ(l, (std::vector<float>{-kInf, 1, 2, -kInf, 4, -kInf}));
  std::vector<float> b = {1, 2, 3};
  const std::vector<int32_t> banned = {2};
  ApplyMask(b, TokenMask{{}, banned});
  EXPECT_EQ(b, (std::vector<float>{1, 2, -kInf}));
  // A ban that would leave nothing is ignored (the allowed set wins).
  std::vector<float> c = {1, 2, 3};
  const std::vector<TokenRange> only2 = {{2, 3}};
  ApplyMask(c, TokenMask{only2, banned});
  EXPECT_EQ(c, (std::vector<float>{-kInf, -kInf, 3}));
}

TEST(SamplerTest, MaskedDrawsNeverLeaveTheAllowedSet) {
  SamplingParams p;
  p.temperature = 1.0f;
  const std::vector<float> logits = {9, 0, 0, 9, 0, 0, 9, 0};
  const std::vector<TokenRange> allowed = {{1, 3}, {4, 6}};
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 400; ++seed) seen.insert(SampleToken(logits, p, {}, seed, TokenMask{allowed, {}}).token_id);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 2, 4, 5}));
  // One allowed id is forced, with the raw logprob still reported.
  p.logprobs = true;
  const std::vector<TokenRange> one = {{7, 8}};
  const SampledToken forced = SampleToken(logits, p, {}, 3, TokenMask{one, {}});
  EXPECT_EQ(forced.token_id, 7);
  EXPECT_LT(forced.logprob, -8.0f);
}

TEST(SamplerTest, RangesOfCoalescesAndInRangesFinds) {
  EXPECT_EQ(RangesOf({5, 1, 2, 3, 9, 2, 10}), (std::vector<TokenRange>{{1, 4}, {5, 6}, {9, 11}}));
  const std::vector<TokenRange> r = {{1, 4}, {9, 11}};
  EXPECT_FALSE(InRanges(r, 0));
  EXPECT_TRUE(InRanges(r, 1));
  EXPECT_TRUE(InRanges(r, 3));
  EXPECT_FALSE(InRanges(r, 4));
  EXPECT_TRUE(InRanges(r, 10));
  EXPECT_FALSE(InRanges(r, 11));
}

TEST(SamplerTest, ValidationNamesTheField) {
  struct Case {
    const char* field;
    std::function<void(SamplingParams&)> mutate;
  };
  const std::vector<Case> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = 2.5f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = std::nanf(""); }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.5f; }},
      {"top_k", [](SamplingParams& p) { p.top_k = 0; }},
      {"top_k", [](SamplingParams& p) { p.top_k = -2; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.1f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = 2.1f; }},
      {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = -3; }},
      {"n", [](SamplingParams& p) { p.n = 0; }},
      {"max_tokens", [](SamplingParams& p) { p.max_tokens = 0; }},
      {"top_logprobs", [](SamplingParams& p) { p.top_logprobs = 21; }},
      {"stop_token_ids", [](SamplingParams& p) { p.stop_token_ids = {-1}; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = 17; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = -1; }},
      {"logit_bias", [](SamplingParams& p) { p.logit_bias = {{3, 100.5f}}; }},
      {"logit_bias", [](SamplingParams& p) { p.logit_bias = {{-3, 1.0f}}; }},
  };
  EXPECT_TRUE(SamplingParams{}.Validate().ok());
  for (const Case& c : cases) {
    SamplingParams p;
    c.mutate(p);
    const Status s = p.Validate();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(s.param(), c.field);
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.message();
  }
  SamplingParams ok;
  ok.temperature = 0;
  ok.top_k = 1;
  ok.top_p = 1;
  ok.min_p = 1;
  ok.presence_penalty = -2;
  ok.top_logprobs = 20;
  EXPECT_TRUE(ok.Validate().ok());
}

}  // namespace
}  // namespace omni
