// Helpers shared by the engine tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "engine/fake_model_runner.h"

namespace omni::testing {

inline constexpr int kVocab = 97;

// "r7" from ("r", 7). (Not `"r" + std::to_string(i)`: GCC 12 warns falsely on it.)
inline std::string Id(const char* prefix, int i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// Deterministic pseudo-random prompt.
inline std::vector<int32_t> MakePrompt(int n, uint32_t salt) {
  std::vector<int32_t> p;
  uint32_t x = salt * 2654435761u + 12345u;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p.push_back(static_cast<int32_t>((x >> 8) % kVocab));
  }
  return p;
}

inline EngineRequest MakeRequest(std::string id, std::vector<int32_t> prompt, int max_tokens) {
  EngineRequest r;
  r.request_id = std::move(id);
  r.prompt_token_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  return r;
}

// Collects outputs per request. Thread-safe.
class OutputCollector {
 public:
  OutputCallback For() {
    return [this](const TokenOutput& out) {
      std::lock_guard lock(mu_);
      outputs_[out.request_id].push_back(out);
    };
  }
  std::vector<int32_t> Tokens(const std::string& id) const {
    std::lock_guard lock(mu_);
    std::vector<int32_t> t;
    auto it = outputs_.find(id);
    if (it == outputs_.end()) return t;
    for (const TokenOutput& o : it->second) {
      if (o.token) t.push_back(o.token->token_id);
    }
    return t;
  }
  // The last output's reason (kNone while running or unknown).
  FinishReason Finish(const std::string& id) const {
    std::lock_guard lock(mu_);
    auto it = outputs_.find(id);
    return it == outputs_.end() || it->second.empty() ? FinishReason::kNone
                                                      : it->second.back().finish_reason;
  }
  std::vector<TokenOutput> Outputs(const std::string& id) const {
    std::lock_guard lock(mu_);
    auto it = outputs_.find(id);
    return it == outputs_.end() ? std::vector<TokenOutput>{} : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<TokenOutput>> outputs_;  // guarded by mu_
};

struct TestCore {
  std::unique_ptr<EngineCore> core;
  FakeModelRunner* model = nullptr;  // owned by core
};

inline TestCore MakeCore(const EngineConfig& config, KvEventSink* sink = nullptr) {
  auto runner = std::make_unique<FakeModelRunner>(kVocab, config.num_kv_blocks);
  TestCore t;
  t.model = runner.get();
  auto core = EngineCore::Create(config, std::move(runner), sink);
  OMNI_CHECK(core.ok()) << core.status().ToString();
  t.core = std::move(core).value();
  return t;
}

inline void RunToCompletion(EngineCore& core, int max_steps = 100000) {
  for (int i = 0; i < max_steps && core.HasWork(); ++i) {
    Status s = core.Step();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_FALSE(core.HasWork()) << "engine did not finish";
}

inline std::vector<int32_t> Reference(const std::vector<int32_t>& prompt, int max_tokens,
                                      const std::vector<MediaSpan>& media = {}) {
  return FakeModelRunner::ReferenceGreedy(prompt, media, max_tokens, kVocab);
}

}  // namespace omni::testing
