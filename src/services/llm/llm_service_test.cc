// LlmService without sockets or weights: the engine runs on
// engine/fake_model_runner.h (injected through LlmServiceOptions::model_loader),
// whose greedy continuation is known independently (ReferenceGreedy), so
// the service's fan-in, detokenizing, stop ids, usage and shutdown are
// checked against it.
#include "services/llm/llm_service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "services/llm/llm_test_fixture.h"

namespace omni::llm {
namespace {

using testing::Fixture;

struct Collected {
  std::vector<std::string> text;    // per choice
  std::vector<std::string> finish;  // per choice
};

StatusOr<Usage> Collect(Fixture& f, const PreparedGeneration& p, Collected* c) {
  c->text.assign(p.sampling.n, "");
  c->finish.assign(p.sampling.n, "");
  return f.service->Generate(p, [c](const GenerationEvent& e) {
    if (e.kind == GenerationEvent::Kind::kDelta) {
      c->text[e.choice] += e.text;
    } else {
      c->finish[e.choice] = e.finish_reason;
    }
    return true;
  });
}

TEST(LlmServiceFake, GreedyCompletionIsTheReferenceContinuation) {
  Fixture f;
  const std::vector<int32_t> prompt = {5, 17, 42, 8, 99, 3};
  std::vector<int32_t> want = omni::testing::FakeModelRunner::ReferenceGreedy(prompt, {}, 12, f.vocab);
  Collected c;
  StatusOr<Usage> usage = Collect(f, f.Prepare(prompt, 12), &c);
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  EXPECT_EQ(c.text[0], f.Decode(want));
  EXPECT_EQ(c.finish[0], "length");
  EXPECT_EQ(usage->prompt_tokens, 6);
  EXPECT_EQ(usage->completion_tokens, 12);
}

TEST(LlmServiceFake, EveryChoiceOfNGetsItsTokensAndUsageAddsThemUp) {
  Fixture f;
  const std::vector<int32_t> prompt = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28};
  std::vector<int32_t> want = omni::testing::FakeModelRunner::ReferenceGreedy(prompt, {}, 8, f.vocab);
  Collected c;
  StatusOr<Usage> usage = Collect(f, f.Prepare(prompt, 8, /*n=*/3), &c);
  ASSERT_TRUE(usage.ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c.text[i], f.Decode(want)) << "choice " << i;  // greedy: all alike
    EXPECT_EQ(c.finish[i], "length");
  }
  EXPECT_EQ(usage->completion_tokens, 24);
}

TEST(LlmServiceFake, StopTokenIdEndsTheChoiceWithoutShowingIt) {
  Fixture f;
  const std::vector<int32_t> prompt = {7, 7, 7, 1, 2};
  std::vector<int32_t> want = omni::testing::FakeModelRunner::ReferenceGreedy(prompt, {}, 10, f.vocab);
  const int32_t stop = want[4];
  size_t cut = 0;
  while (want[cut] != stop) ++cut;  // the first occurrence ends it
  Collected c;
  StatusOr<Usage> usage = Collect(f, f.Prepare(prompt, 10, 1, {stop}), &c);
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(c.text[0], f.Decode(std::span<const int32_t>(want.data(), cut)));
  EXPECT_EQ(c.finish[0], "stop");
}

// Shutdown aborts what runs: done still comes, each choice ends "abort",
// and later requests get Unavailable.
TEST(LlmServiceFake, ShutdownEndsRunningRequestsAndRefusesNewOnes) {
  Fixture f;
  const std::vector<int32_t> prompt = {1, 2, 3};
  std::promise<void> started;
  std::atomic<bool> first{true};
  std::promise<StatusOr<Usage>> done;
  std::string finish;
  f.service->StartGenerate(
      f.Prepare(prompt, 3000),
      [&](const GenerationEvent& e) {
        if (first.exchange(false)) started.set_value();
        if (e.kind == GenerationEvent::Kind::kFinish) finish = e.finish_reason;
        return true;
      },
      [&](StatusOr<Usage> u) { done.set_value(std::move(u)); });
  started.get_future().wait();
  f.service->Shutdown();
  auto fut = done.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(fut.get().ok());
  EXPECT_EQ(finish, "abort");
  std::promise<StatusOr<Usage>> refused;
  f.service->StartGenerate(
      f.Prepare(prompt, 4), [](const GenerationEvent&) { return true; },
      [&](StatusOr<Usage> u) { refused.set_value(std::move(u)); });
  StatusOr<Usage> r = refused.get_future().get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace omni::llm
