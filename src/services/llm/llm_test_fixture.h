// LlmService on the engine's fake model runner (engine/fake_model_runner.h),
// injected through LlmServiceOptions::model_loader, with the demo tokenizer:
// no weights and no sockets. Shared by the service's and the HTTP adapter's
// tests.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "engine/fake_model_runner.h"
#include "services/llm/llm_service.h"
#include "text/demo_tokenizer.h"

namespace omni::llm::testing {

namespace fs = std::filesystem;

// The fake runner, failing every step from `fail_from_step` on (-1: never).
class FailingRunner final : public ModelRunner {
 public:
  FailingRunner(int vocab, int num_blocks, int fail_from_step) : inner_(vocab, num_blocks), fail_from_(fail_from_step) {}
  int vocab_size() const override { return inner_.vocab_size(); }
  StatusOr<StepOutput> Step(const StepBatch& batch) override {
    if (fail_from_ >= 0 && steps_++ >= fail_from_) return Internal("fake model failure");
    return inner_.Step(batch);
  }

 private:
  omni::testing::FakeModelRunner inner_;
  int fail_from_;
  int steps_ = 0;
};

class FakeLoaded final : public LoadedModel {
 public:
  FakeLoaded(int vocab, int fail_from_step) : vocab_(vocab), fail_from_(fail_from_step) {}
  int vocab_size() const override { return vocab_; }
  int64_t hidden_size() const override { return 64; }
  int64_t max_position_embeddings() const override { return 4096; }
  std::vector<int64_t> eos_token_ids() const override { return {}; }
  KvCacheSpec kv_spec(DType) const override { return KvCacheSpec{1, 1, 1, DType::kF32}; }
  std::unique_ptr<ModelRunner> MakeRunner(const KvCacheSpec&, int num_blocks) override {
    return std::make_unique<FailingRunner>(vocab_, num_blocks, fail_from_);
  }

 private:
  int vocab_;
  int fail_from_;
};

struct Fixture {
  explicit Fixture(int fail_from_step = -1) {
    dir = (fs::temp_directory_path() / ("omni_llm_fixture_" + std::to_string(::getpid()) + "_" + std::to_string(counter++))).string();
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
    o.model_loader = [v = vocab, fail_from_step](const std::string&) -> StatusOr<std::unique_ptr<LoadedModel>> {
      return std::unique_ptr<LoadedModel>(std::make_unique<FakeLoaded>(v, fail_from_step));
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

  static inline std::atomic<int> counter{0};
  std::string dir;
  MetricsRegistry registry;
  std::unique_ptr<Tokenizer> tokenizer;
  int vocab = 0;
  std::unique_ptr<LlmService> service;
};

}  // namespace omni::llm::testing
