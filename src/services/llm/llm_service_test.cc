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

#include "engine/fake_model_runner.h"
#include "text/demo_tokenizer.h"

namespace omni::llm {
namespace {

namespace fs = std::filesystem;

class FakeLoaded final : public LoadedModel {
 public:
  explicit FakeLoaded(int vocab) : vocab_(vocab) {}
  int vocab_size() const override { return vocab_; }
  int64_t hidden_size() const override { return 64; }
  int64_t max_position_embeddings() const override { return 4096; }
  std::vector<int64_t> eos_token_ids() const override { return {}; }
  KvCacheSpec kv_spec(DType) const override { return KvCacheSpec{1, 1, 1, DType::kF32}; }
  std::unique_ptr<ModelRunner> MakeRunner(const KvCacheSpec&, int num_blocks) override {
    return std::make_unique<testing::FakeModelRunner>(vocab_, num_blocks);
  }

 private:
  int vocab_;
};

struct Fixture {
  Fixture() {
    dir = (fs::temp_directory_path() / ("omni_llm_service_test_" + std::to_string(::getpid()))).string();
    fs::create_directories(dir);
    auto json = MakeDemoTokenizerJson(DemoTokenizerSpec{.num_merges = 200, .num_vision_codes = 16, .num_audio_codes = 16});
    OMNI_CHECK(json.ok());
    std::ofstream(dir + "/tokenizer.json") << *json;
    auto tok = Tokenizer::FromJson(*json);
    OMNI_CHECK(tok.ok());
    tokenizer = std::move(tok).value();
    vocab = tokenizer->vocab_size();
    LlmServiceOptions o;
    o.model_dir = dir;
    o.served_model_name = "fake";
    o.num_kv_blocks = 256;
    o.metrics = &registry;
    o.model_loader = [v = vocab](const std::string&) -> StatusOr<std::unique_ptr<LoadedModel>> {
      return std::unique_ptr<LoadedModel>(std::make_unique<FakeLoaded>(v));
    };
    service = std::move(LlmService::Create(std::move(o))).value();
    Status s = service->Load();
    OMNI_CHECK(s.ok()) << s.ToString();
  }
  ~Fixture() {
    service->Shutdown();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  PreparedGeneration Prepare(std::vector<int32_t> prompt, int max_tokens, int n = 1,
                             std::vector<int32_t> stop_ids = {}) {
    CompletionRequest req;
    req.prompt = std::move(prompt);
    req.options.sampling.temperature = 0;
    req.options.sampling.max_tokens = max_tokens;
    req.options.sampling.ignore_eos = true;
    req.options.sampling.n = n;
    req.options.sampling.stop_token_ids = std::move(stop_ids);
    req.options.max_tokens_set = true;
    auto p = service->PrepareCompletion(req);
    OMNI_CHECK(p.ok()) << p.status().ToString();
    return *p;
  }
  std::string Decode(std::span<const int32_t> ids) {
    auto t = tokenizer->Decode(ids, DecodeOptions{.skip_special_tokens = true});
    OMNI_CHECK(t.ok());
    return *t;
  }

  std::string dir;
  MetricsRegistry registry;
  std::unique_ptr<Tokenizer> tokenizer;
  int vocab = 0;
  std::unique_ptr<LlmService> service;
};

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
  std::vector<int32_t> want = testing::FakeModelRunner::ReferenceGreedy(prompt, {}, 12, f.vocab);
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
  std::vector<int32_t> want = testing::FakeModelRunner::ReferenceGreedy(prompt, {}, 8, f.vocab);
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
  std::vector<int32_t> want = testing::FakeModelRunner::ReferenceGreedy(prompt, {}, 10, f.vocab);
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
