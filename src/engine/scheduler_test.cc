// Scheduler, prefix caching and preemption, driven through EngineCore with
// the deterministic fake model.
#include <gtest/gtest.h>

#include <set>

#include "engine/engine_test_util.h"

namespace omni {
namespace {

using testing::kVocab;
using testing::MakeCore;
using testing::MakePrompt;
using testing::MakeRequest;
using testing::OutputCollector;
using testing::Reference;
using testing::RunToCompletion;

EngineConfig SmallConfig(int blocks, int budget = 2048) {
  EngineConfig c;
  c.num_kv_blocks = blocks;
  c.max_model_len = blocks * kBlockSize;
  c.max_num_batched_tokens = budget;
  return c;
}

Sha256Digest Digest(uint8_t fill) {
  Sha256Digest d;
  d.fill(fill);
  return d;
}

TEST(SchedulerTest, ChunkedPrefillSplitsLongPromptWithinBudget) {
  auto t = MakeCore(SmallConfig(64, /*budget=*/32));
  OutputCollector out;
  const auto prompt = MakePrompt(100, 1);
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", prompt, 3), out.For()).ok());
  RunToCompletion(*t.core);
  EXPECT_EQ(t.model->step_chunk_sizes,
            (std::vector<std::vector<int32_t>>{{32}, {32}, {32}, {4}, {1}, {1}}));
  for (int32_t n : t.model->step_token_counts) EXPECT_LE(n, 32);
  EXPECT_EQ(out.Tokens("a"), Reference(prompt, 3));
  EXPECT_EQ(out.Finish("a"), FinishReason::kLength);
}

TEST(SchedulerTest, DecodesAreScheduledBeforePrefillChunks) {
  auto t = MakeCore(SmallConfig(64, /*budget=*/20));
  OutputCollector out;
  const auto pa = MakePrompt(10, 2), pb = MakePrompt(60, 3);
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", pa, 5), out.For()).ok());
  ASSERT_TRUE(t.core->Step().ok());  // a: whole prompt, first token
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("b", pb, 2), out.For()).ok());
  ASSERT_TRUE(t.core->Step().ok());
  EXPECT_EQ(t.model->step_chunk_sizes[1], (std::vector<int32_t>{1, 19}));
  RunToCompletion(*t.core);
  EXPECT_EQ(out.Tokens("a"), Reference(pa, 5));
  EXPECT_EQ(out.Tokens("b"), Reference(pb, 2));
}

TEST(SchedulerTest, PrefixReuseAcrossRequests) {
  auto t = MakeCore(SmallConfig(64));
  OutputCollector out;
  const auto prompt = MakePrompt(200, 4);
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", prompt, 4), out.For()).ok());
  RunToCompletion(*t.core);
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("b", prompt, 4), out.For()).ok());
  RunToCompletion(*t.core);
  const auto b = out.Outputs("b");
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b.back().num_cached_tokens, 192);  // 12 full blocks of 200 tokens
  EXPECT_GE(b.back().num_cached_tokens, 0.9 * 200);
  EXPECT_EQ(out.Tokens("b"), out.Tokens("a"));
  EXPECT_EQ(out.Tokens("a"), Reference(prompt, 4));
  const EngineMetrics m = t.core->Metrics();
  EXPECT_EQ(m.prefix_cache_queries, 400);
  EXPECT_EQ(m.prefix_cache_hits, 192);
  EXPECT_EQ(m.prompt_tokens_total, 400);
  EXPECT_EQ(m.generation_tokens_total, 8);
  EXPECT_EQ(m.kv_cache_usage, 0.0);
}

TEST(SchedulerTest, WholePromptCachedStillComputesLastToken) {
  auto t = MakeCore(SmallConfig(16));
  OutputCollector out;
  const auto prompt = MakePrompt(64, 5);  // exactly 4 blocks
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", prompt, 2), out.For()).ok());
  RunToCompletion(*t.core);
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("b", prompt, 2), out.For()).ok());
  RunToCompletion(*t.core);
  EXPECT_EQ(out.Outputs("b").back().num_cached_tokens, 48);
  EXPECT_EQ(out.Tokens("b"), Reference(prompt, 2));
}

TEST(SchedulerTest, DifferentMediaDoesNotHitPastTheMedia) {
  auto t = MakeCore(SmallConfig(64));
  OutputCollector out;
  const auto prompt = MakePrompt(100, 6);
  auto with_media = [&](std::string id, uint8_t fill) {
    EngineRequest r = MakeRequest(std::move(id), prompt, 3);
    r.media.push_back(MediaSpan{40, 20, Digest(fill), {}});
    return r;
  };
  ASSERT_TRUE(t.core->AddRequest(with_media("img1", 1), out.For()).ok());
  RunToCompletion(*t.core);
  ASSERT_TRUE(t.core->AddRequest(with_media("img2", 2), out.For()).ok());
  RunToCompletion(*t.core);
  ASSERT_TRUE(t.core->AddRequest(with_media("img1-again", 1), out.For()).ok());
  RunToCompletion(*t.core);
  EXPECT_EQ(out.Outputs("img2").back().num_cached_tokens, 32);  // blocks 0 and 1 precede the image
  EXPECT_EQ(out.Outputs("img1-again").back().num_cached_tokens, 96);
  const std::vector<MediaSpan> m1 = {MediaSpan{40, 20, Digest(1), {}}};
  const std::vector<MediaSpan> m2 = {MediaSpan{40, 20, Digest(2), {}}};
  EXPECT_EQ(out.Tokens("img1"), Reference(prompt, 3, m1));
  EXPECT_EQ(out.Tokens("img2"), Reference(prompt, 3, m2));
  EXPECT_EQ(out.Tokens("img1-again"), Reference(prompt, 3, m1));
}

// A pool far too small for all sequences at once: every request still
// completes with exactly its unpreempted output (greedy and seeded sampling).
TEST(SchedulerTest, PreemptionByRecomputeKeepsOutputsExact) {
  auto t = MakeCore(SmallConfig(10));  // 160 token slots
  OutputCollector out;
  auto make = [](int i) {
    EngineRequest r = MakeRequest(testing::Id("r", i), MakePrompt(30 + 3 * i, 10 + i), 40);
    if (i % 2 == 1) {
      r.sampling.temperature = 1.0f;
      r.sampling.seed = 1000 + i;
    }
    return r;
  };
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 8; ++i) {
    requests.push_back(make(i));
    ASSERT_TRUE(t.core->AddRequest(make(i), out.For()).ok());
  }
  RunToCompletion(*t.core);
  EXPECT_GT(t.core->Metrics().num_preemptions_total, 0);
  EXPECT_EQ(t.core->prefix_cache().pool().num_free(), 10);
  // Each request alone in a big pool is the reference.
  for (EngineRequest& r : requests) {
    auto alone = MakeCore(SmallConfig(64));
    OutputCollector alone_out;
    const std::string id = r.request_id;
    ASSERT_TRUE(alone.core->AddRequest(std::move(r), alone_out.For()).ok());
    RunToCompletion(*alone.core);
    EXPECT_EQ(alone.core->Metrics().num_preemptions_total, 0);
    EXPECT_EQ(out.Tokens(id), alone_out.Tokens(id)) << id;
    EXPECT_EQ(out.Tokens(id).size(), 40u);
    EXPECT_EQ(out.Finish(id), FinishReason::kLength);
  }
}

TEST(SchedulerTest, CancellationFreesBlocksAtOnce) {
  auto t = MakeCore(SmallConfig(32));
  OutputCollector out;
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", MakePrompt(40, 7), 100), out.For()).ok());
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("b", MakePrompt(40, 8), 100), out.For()).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.core->Step().ok());
  EXPECT_EQ(t.core->prefix_cache().pool().num_free(), 32 - 6);
  EXPECT_TRUE(t.core->FinishRequest("a", FinishReason::kAbort));
  EXPECT_EQ(t.core->prefix_cache().pool().num_free(), 32 - 3);
  EXPECT_EQ(out.Finish("a"), FinishReason::kAbort);
  EXPECT_FALSE(out.Outputs("a").back().token.has_value());
  EXPECT_EQ(t.core->scheduler().num_running(), 1);
  EXPECT_FALSE(t.core->FinishRequest("a", FinishReason::kAbort));  // already gone
  // A caller-detected stop string finishes with "stop".
  EXPECT_TRUE(t.core->FinishRequest("b", FinishReason::kStop));
  EXPECT_EQ(out.Finish("b"), FinishReason::kStop);
  EXPECT_EQ(t.core->prefix_cache().pool().num_free(), 32);
  EXPECT_FALSE(t.core->HasWork());
}

TEST(SchedulerTest, StopConditions) {
  const auto prompt = MakePrompt(20, 9);
  const auto ref = Reference(prompt, 10);
  EngineConfig config = SmallConfig(16);
  config.eos_token_id = ref[2];
  auto t = MakeCore(config);
  OutputCollector out;
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("eos", prompt, 10), out.For()).ok());
  EngineRequest ignore = MakeRequest("ignore", prompt, 10);
  ignore.sampling.ignore_eos = true;
  ASSERT_TRUE(t.core->AddRequest(std::move(ignore), out.For()).ok());
  EngineRequest stop_id = MakeRequest("stop_id", prompt, 10);
  stop_id.sampling.ignore_eos = true;
  stop_id.sampling.stop_token_ids = {ref[4]};
  ASSERT_TRUE(t.core->AddRequest(std::move(stop_id), out.For()).ok());
  EngineRequest long_one = MakeRequest("model_len", prompt, 1000);
  long_one.sampling.ignore_eos = true;
  ASSERT_TRUE(t.core->AddRequest(std::move(long_one), out.For()).ok());
  RunToCompletion(*t.core);
  auto first = [&](int n) { return std::vector<int32_t>(ref.begin(), ref.begin() + n); };
  // ref[2] may also appear earlier; the engine stops at the first occurrence.
  const auto eos_at = std::find(ref.begin(), ref.end(), ref[2]) - ref.begin();
  EXPECT_EQ(out.Tokens("eos"), first(static_cast<int>(eos_at) + 1));
  EXPECT_EQ(out.Finish("eos"), FinishReason::kStop);
  EXPECT_EQ(out.Tokens("ignore"), ref);
  EXPECT_EQ(out.Finish("ignore"), FinishReason::kLength);
  const auto stop_at = std::find(ref.begin(), ref.end(), ref[4]) - ref.begin();
  EXPECT_EQ(out.Tokens("stop_id"), first(static_cast<int>(stop_at) + 1));
  EXPECT_EQ(out.Finish("stop_id"), FinishReason::kStop);
  EXPECT_EQ(out.Tokens("model_len").size(), 16u * 16u - 20u);  // max_model_len = 256
  EXPECT_EQ(out.Finish("model_len"), FinishReason::kLength);
}

// min_tokens bans EOS and the stop ids until that many tokens are out; a
// constraint decides alone (a forced token is taken even if banned).
TEST(SchedulerTest, MinTokensHoldsOffStopsAndConstraintsSteer) {
  const auto prompt = MakePrompt(20, 9);
  const auto ref = Reference(prompt, 10);
  EngineConfig config = SmallConfig(16);
  config.eos_token_id = ref[0];  // the greedy first token ends a plain request at once
  auto t = MakeCore(config);
  OutputCollector out;
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("plain", prompt, 10), out.For()).ok());
  EngineRequest held = MakeRequest("held", prompt, 10);
  held.sampling.min_tokens = 4;
  held.sampling.stop_token_ids = {ref[0] + 1};
  ASSERT_TRUE(t.core->AddRequest(std::move(held), out.For()).ok());
  // A constraint forcing token 7 three times, then free.
  struct ForceSeven final : TokenConstraint {
    bool AllowedNext(std::vector<TokenRange>* allowed) const override {
      if (taken >= 3) return false;
      *allowed = {{7, 8}};
      return true;
    }
    void Accept(int32_t) override { ++taken; }
    int taken = 0;
  };
  EngineRequest forced = MakeRequest("forced", prompt, 5);
  forced.sampling.ignore_eos = true;
  forced.constraint = std::make_unique<ForceSeven>();
  ASSERT_TRUE(t.core->AddRequest(std::move(forced), out.For()).ok());
  RunToCompletion(*t.core);
  EXPECT_EQ(out.Tokens("plain"), std::vector<int32_t>{ref[0]});
  const std::vector<int32_t> held_tokens = out.Tokens("held");
  ASSERT_GE(held_tokens.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE(held_tokens[i], ref[0]) << i;
    EXPECT_NE(held_tokens[i], ref[0] + 1) << i;
  }
  const std::vector<int32_t> f = out.Tokens("forced");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(std::vector<int32_t>(f.begin(), f.begin() + 3), (std::vector<int32_t>{7, 7, 7}));
}

TEST(SchedulerTest, RequestValidation) {
  auto t = MakeCore(SmallConfig(4));  // max_model_len 64
  OutputCollector out;
  EXPECT_EQ(t.core->AddRequest(MakeRequest("a", {}, 1), out.For()).param(), "prompt");
  EXPECT_EQ(t.core->AddRequest(MakeRequest("a", MakePrompt(64, 1), 1), out.For()).param(), "prompt");
  EXPECT_EQ(t.core->AddRequest(MakeRequest("a", {kVocab}, 1), out.For()).param(), "prompt");
  EngineRequest stop = MakeRequest("a", {1, 2}, 1);
  stop.sampling.stop_token_ids = {kVocab};
  EXPECT_EQ(t.core->AddRequest(std::move(stop), out.For()).param(), "stop_token_ids");
  EngineRequest bias = MakeRequest("a", {1, 2}, 1);
  bias.sampling.logit_bias = {{kVocab, 1.0f}};
  EXPECT_EQ(t.core->AddRequest(std::move(bias), out.For()).param(), "logit_bias");
  EngineRequest bad = MakeRequest("a", {1, 2}, 1);
  bad.sampling.top_p = 0;
  EXPECT_EQ(t.core->AddRequest(std::move(bad), out.For()).param(), "top_p");
  EngineRequest media = MakeRequest("a", {1, 2}, 1);
  media.media.push_back(MediaSpan{1, 5, {}, {}});
  EXPECT_EQ(t.core->AddRequest(std::move(media), out.For()).param(), "media");
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", {1, 2}, 1), out.For()).ok());
  EXPECT_EQ(t.core->AddRequest(MakeRequest("a", {1, 2}, 1), out.For()).code(), StatusCode::kAlreadyExists);
  EngineConfig too_long = SmallConfig(4);
  too_long.max_model_len = 65;
  EXPECT_FALSE(too_long.Validate().ok());
}

TEST(SchedulerTest, ModelErrorFailsTheStepAndTheEngineKeepsServing) {
  auto t = MakeCore(SmallConfig(16));
  OutputCollector out;
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", MakePrompt(10, 1), 3), out.For()).ok());
  t.model->fail_next_step = true;
  EXPECT_FALSE(t.core->Step().ok());
  EXPECT_EQ(out.Finish("a"), FinishReason::kError);
  EXPECT_EQ(t.core->prefix_cache().pool().num_free(), 16);
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("b", MakePrompt(10, 1), 3), out.For()).ok());
  RunToCompletion(*t.core);
  EXPECT_EQ(out.Tokens("b"), Reference(MakePrompt(10, 1), 3));
}

// Replays the KV events: every removal names a stored hash, nothing is
// stored twice while held, and the final set matches the pool's cache.
TEST(SchedulerTest, KvEventsTrackTheCache) {
  RecordingKvEventSink sink;
  auto t = MakeCore(SmallConfig(12), &sink);
  OutputCollector out;
  const auto prompt = MakePrompt(40, 11);
  ASSERT_TRUE(t.core->AddRequest(MakeRequest("a", prompt, 1), out.For()).ok());
  RunToCompletion(*t.core);
  ASSERT_EQ(sink.events.size(), 1u);
  const auto& stored = std::get<BlockStored>(sink.events[0]);
  EXPECT_EQ(stored.block_hashes.size(), 2u);
  EXPECT_FALSE(stored.parent_hash.has_value());
  EXPECT_EQ(stored.token_ids, std::vector<int32_t>(prompt.begin(), prompt.begin() + 32));

  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(t.core->AddRequest(MakeRequest(testing::Id("x", i), MakePrompt(50, 20 + i), 30),
                                   out.For()).ok());
  }
  RunToCompletion(*t.core);
  std::set<BlockHash> held;
  int removed = 0;
  for (const KvEvent& e : sink.events) {
    if (const auto* s = std::get_if<BlockStored>(&e)) {
      EXPECT_EQ(s->token_ids.size(), s->block_hashes.size() * kBlockSize);
      if (s->parent_hash) {
        EXPECT_TRUE(held.contains(*s->parent_hash));
      }
      for (BlockHash h : s->block_hashes) EXPECT_TRUE(held.insert(h).second);
    } else if (const auto* r = std::get_if<BlockRemoved>(&e)) {
      for (BlockHash h : r->block_hashes) EXPECT_EQ(held.erase(h), 1u);
      ++removed;
    }
  }
  EXPECT_GT(removed, 0);
  EXPECT_EQ(static_cast<int>(held.size()), t.core->prefix_cache().pool().num_cached());
}

}  // namespace
}  // namespace omni
