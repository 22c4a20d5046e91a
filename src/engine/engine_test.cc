// The threaded Engine: submission from several threads, callbacks,
// cancellation and shutdown.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>

#include "engine/engine_test_util.h"

namespace omni {
namespace {

using testing::FakeModelRunner;
using testing::kVocab;
using testing::MakePrompt;
using testing::MakeRequest;
using testing::Reference;

// Counts finished requests; lets a test wait for them. Thread-safe.
class FinishLatch {
 public:
  OutputCallback Wrap(OutputCallback inner) {
    return [this, inner = std::move(inner)](const TokenOutput& out) {
      inner(out);
      if (out.finish_reason == FinishReason::kNone) return;
      std::lock_guard lock(mu_);
      ++finished_;
      cv_.notify_all();
    };
  }
  // A hang guard, not a timing assertion: the work takes well under a second.
  bool WaitFor(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return finished_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int finished_ = 0;  // guarded by mu_
};

std::unique_ptr<Engine> StartEngine(int blocks, int max_model_len) {
  EngineConfig c;
  c.num_kv_blocks = blocks;
  c.max_model_len = max_model_len;
  c.max_num_batched_tokens = 64;
  auto engine = Engine::Start(c, std::make_unique<FakeModelRunner>(kVocab, blocks), nullptr);
  OMNI_CHECK(engine.ok()) << engine.status().ToString();
  return std::move(engine).value();
}

TEST(EngineTest, ThirtyTwoConcurrentRequestsWithASmallPoolAllComplete) {
  auto engine = StartEngine(/*blocks=*/16, /*max_model_len=*/128);
  testing::OutputCollector out;
  FinishLatch latch;
  constexpr int kRequests = 32;
  std::vector<std::thread> submitters;
  for (int th = 0; th < 4; ++th) {
    submitters.emplace_back([&, th] {
      for (int i = th; i < kRequests; i += 4) {
        EngineRequest r = MakeRequest(testing::Id("r", i), MakePrompt(20 + i, 100 + i), 24);
        Status s = engine->Submit(std::move(r), latch.Wrap(out.For()));
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    });
  }
  for (auto& t : submitters) t.join();
  ASSERT_TRUE(latch.WaitFor(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    const std::string id = testing::Id("r", i);
    EXPECT_EQ(out.Tokens(id), Reference(MakePrompt(20 + i, 100 + i), 24)) << id;
    EXPECT_EQ(out.Finish(id), FinishReason::kLength) << id;
  }
  engine->Stop();
  const EngineMetrics m = engine->Metrics();
  EXPECT_GT(m.num_preemptions_total, 0);
  EXPECT_EQ(m.num_running, 0);
  EXPECT_EQ(m.num_waiting, 0);
  EXPECT_EQ(m.kv_cache_usage, 0.0);
  EXPECT_EQ(m.generation_tokens_total, 24 * kRequests);
  EXPECT_EQ(m.num_blocks, 16);
}

TEST(EngineTest, CancelFromTheOutputStream) {
  auto engine = StartEngine(64, 1024);
  testing::OutputCollector out;
  FinishLatch latch;
  Engine* e = engine.get();
  OutputCallback cancel_after_two = [e, inner = out.For()](const TokenOutput& o) {
    inner(o);
    if (o.num_output_tokens == 2 && o.finish_reason == FinishReason::kNone) e->Cancel(o.request_id);
  };
  ASSERT_TRUE(engine->Submit(MakeRequest("c", MakePrompt(30, 1), 900), latch.Wrap(cancel_after_two)).ok());
  ASSERT_TRUE(latch.WaitFor(1));
  EXPECT_EQ(out.Finish("c"), FinishReason::kAbort);
  // Cancellation is applied at the next iteration boundary: at most one more token.
  EXPECT_LE(out.Tokens("c").size(), 3u);
  engine->Stop();
  EXPECT_EQ(engine->Metrics().kv_cache_usage, 0.0);
}

TEST(EngineTest, SubmitValidatesAndStopAbortsEverything) {
  auto engine = StartEngine(64, 1024);
  testing::OutputCollector out;
  EngineRequest bad = MakeRequest("bad", {1, 2, 3}, 4);
  bad.sampling.temperature = 3;
  const Status s = engine->Submit(std::move(bad), out.For());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.param(), "temperature");
  ASSERT_TRUE(engine->Submit(MakeRequest("long", MakePrompt(30, 2), 990), out.For()).ok());
  engine->Stop();
  EXPECT_EQ(out.Finish("long"), FinishReason::kAbort);
  EXPECT_EQ(engine->Submit(MakeRequest("late", {1}, 1), out.For()).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace omni
