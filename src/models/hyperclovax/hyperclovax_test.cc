// HyperClovaxModel against the PyTorch reference (tools/reference/
// hyperclovax_ref.py): the demo folders are regenerated here with
// WriteDemoLlm (byte-identical to the ones the goldens were computed from,
// which the recorded sha256 checks), then logits and greedy continuations are
// compared through the simple API and through the paged, batched API.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "models/hyperclovax/demo_model.h"
#include "models/hyperclovax/hyperclovax.h"
#include "models/hyperclovax/llm_rope.h"
#include "storage/content_hash.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string ReadFile(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// max |got - want| / max |want|: the bf16 error measure of the ops tests.
double RelErr(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return err / std::max(scale, 1e-30);
}

std::vector<float> Row(const Tensor& t, int64_t row) {
  std::vector<float> all = t.ToFloats();
  const int64_t width = t.dim(-1);
  return std::vector<float>(all.begin() + row * width, all.begin() + (row + 1) * width);
}

int32_t Argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

constexpr double kBf16Tolerance = 1e-2;

struct Case {
  std::string name;
  DemoLlmSpec spec;
};

class HyperClovaxGoldenTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("omni_models_" + GetParam().name + "_" + std::to_string(::getpid()));
    ASSERT_TRUE(WriteDemoLlm(GetParam().spec, dir_.string()).ok());
    golden_ = Json::parse(ReadFile(fs::path(OMNI_MODELS_TESTDATA) / (GetParam().name + "_golden.json")));
    auto model = HyperClovaxModel::Load(dir_.string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(model).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<int32_t> Ids(const Json& prompt) const { return prompt["ids"].get<std::vector<int32_t>>(); }
  std::vector<int32_t> Greedy(const Json& prompt) const { return prompt["greedy"].get<std::vector<int32_t>>(); }

  fs::path dir_;
  Json golden_;
  std::unique_ptr<HyperClovaxModel> model_;
};

TEST_P(HyperClovaxGoldenTest, FilesAreTheOnesTheGoldensCameFrom) {
  EXPECT_EQ(Sha256Hex(ReadFile(dir_ / "model.safetensors")), golden_["weights_sha256"].get<std::string>())
      << "WriteDemoLlm output drifted: regenerate the goldens (tools/reference/hyperclovax_ref.py)";
  EXPECT_EQ(Sha256Hex(ReadFile(dir_ / "config.json")), golden_["config_sha256"].get<std::string>());
}

TEST_P(HyperClovaxGoldenTest, SimpleForwardMatchesReferenceLogits) {
  for (const Json& prompt : golden_["prompts"]) {
    const std::vector<int32_t> ids = Ids(prompt);
    std::map<std::string, Tensor> activations;
    ActivationCallback record = [&](std::string_view name, const Tensor& t) { activations[std::string(name)] = t; };
    auto logits = model_->Forward(ids, &record);
    ASSERT_TRUE(logits.ok()) << logits.status().ToString();
    ASSERT_EQ(logits->shape(), (Shape{static_cast<int64_t>(ids.size()), model_->vocab_size()}));
    EXPECT_LE(RelErr(Row(*logits, ids.size() - 1), prompt["last_logits"].get<std::vector<float>>()), kBf16Tolerance);
    if (prompt.contains("all_logits")) {
      for (size_t p = 0; p < ids.size(); ++p) {
        EXPECT_LE(RelErr(Row(*logits, p), prompt["all_logits"][p].get<std::vector<float>>()), kBf16Tolerance)
            << "position " << p;
      }
      for (const auto& [name, values] : prompt["layer_outputs_last_token"].items()) {
        ASSERT_TRUE(activations.count(name)) << name;
        EXPECT_LE(RelErr(Row(activations[name], ids.size() - 1), values.get<std::vector<float>>()), kBf16Tolerance)
            << name;
      }
    }
  }
}

TEST_P(HyperClovaxGoldenTest, SimpleGreedyMatchesReference) {
  for (const Json& prompt : golden_["prompts"]) {
    std::vector<int32_t> seq = Ids(prompt);
    const size_t prompt_len = seq.size();
    for (size_t step = 0; step < Greedy(prompt).size(); ++step) {
      auto logits = model_->Forward(seq);
      ASSERT_TRUE(logits.ok());
      seq.push_back(Argmax(Row(*logits, seq.size() - 1)));
    }
    EXPECT_EQ(std::vector<int32_t>(seq.begin() + prompt_len, seq.end()), Greedy(prompt));
  }
}

// A sequence decoded through the paged API.
struct PagedSequence {
  std::vector<int32_t> tokens;  // prompt, then generated
  std::vector<int32_t> block_table;
  int64_t cached = 0;  // tokens whose K/V are in the cache
  size_t prompt_len = 0;
  std::vector<int32_t> generated;
};

// Two prompts of different lengths decoded together over a small cache with
// scattered block ids. Step 0 prefills prompt A and the first 10 tokens of B;
// step 1 prefills the rest of B starting at position 10 (mid-block) while A
// decodes; then both decode one token per step.
void RunPagedGreedy(const HyperClovaxModel& model, const Json& golden, DType cache_dtype) {
  const Json& pa = golden["prompts"][0];
  const Json& pb = golden["prompts"][2];
  KvCacheStorage cache = KvCacheStorage::Allocate(model.num_layers(), 8, model.num_kv_heads(), model.head_dim(),
                                                  cache_dtype);
  std::vector<PagedSequence> seqs(2);
  seqs[0].tokens = pa["ids"].get<std::vector<int32_t>>();
  seqs[0].block_table = {5, 2};
  seqs[1].tokens = pb["ids"].get<std::vector<int32_t>>();
  seqs[1].block_table = {0, 7, 3};
  for (PagedSequence& s : seqs) s.prompt_len = s.tokens.size();
  const size_t steps = pa["greedy"].size();
  ASSERT_EQ(pb["greedy"].size(), steps);
  const int64_t first_chunk_b = 10;

  for (int step = 0; seqs[0].generated.size() < steps || seqs[1].generated.size() < steps; ++step) {
    ForwardBatch batch;
    std::vector<int32_t> ids;
    std::vector<int> wants_logits;  // sequence index per logit row
    for (int si = 0; si < 2; ++si) {
      PagedSequence& s = seqs[si];
      if (s.generated.size() >= steps) continue;
      int64_t n = static_cast<int64_t>(s.tokens.size()) - s.cached;
      if (si == 1 && step == 0) n = first_chunk_b;
      ids.insert(ids.end(), s.tokens.begin() + s.cached, s.tokens.begin() + s.cached + n);
      batch.sequences.push_back({.num_tokens = n, .start_position = s.cached, .block_table = s.block_table});
      if (s.cached + n == static_cast<int64_t>(s.tokens.size())) {
        batch.logit_rows.push_back(static_cast<int64_t>(ids.size()) - 1);
        wants_logits.push_back(si);
      }
      s.cached += n;
    }
    batch.token_ids = ids;
    Tensor logits;
    Status st = model.Forward(batch, cache.view, &logits);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t r = 0; r < wants_logits.size(); ++r) {
      PagedSequence& s = seqs[wants_logits[r]];
      std::vector<float> row = Row(logits, r);
      if (s.generated.empty()) {  // the prompt's last position: compare with the reference
        const Json& p = wants_logits[r] == 0 ? pa : pb;
        EXPECT_LE(RelErr(row, p["last_logits"].get<std::vector<float>>()), kBf16Tolerance);
      }
      s.generated.push_back(Argmax(row));
      s.tokens.push_back(s.generated.back());
    }
  }
  EXPECT_EQ(seqs[0].generated, pa["greedy"].get<std::vector<int32_t>>());
  EXPECT_EQ(seqs[1].generated, pb["greedy"].get<std::vector<int32_t>>());
}

TEST_P(HyperClovaxGoldenTest, PagedBatchedGreedyMatchesReferenceF32Cache) {
  RunPagedGreedy(*model_, golden_, DType::kF32);
}

TEST_P(HyperClovaxGoldenTest, PagedBatchedGreedyMatchesReferenceBf16Cache) {
  RunPagedGreedy(*model_, golden_, DType::kBF16);
}

TEST_P(HyperClovaxGoldenTest, InjectedRowsReplaceEmbeddingsBeforeTheMultiplier) {
  const std::vector<int32_t> ids = Ids(golden_["prompts"][1]);
  auto plain = model_->Forward(ids);
  ASSERT_TRUE(plain.ok());
  // Rows 3..5 injected as their own embeddings: same logits as plain ids.
  auto rows = model_->EmbedTokens(std::span<const int32_t>(ids).subspan(3, 3));
  ASSERT_TRUE(rows.ok());
  std::vector<int32_t> with_placeholders = ids;
  for (int i = 3; i < 6; ++i) with_placeholders[i] = -1;  // ignored under injected rows
  KvCacheStorage cache = KvCacheStorage::Allocate(model_->num_layers(), 1, model_->num_kv_heads(),
                                                  model_->head_dim(), DType::kF32);
  std::vector<int32_t> table = {0};
  ForwardBatch batch;
  batch.token_ids = with_placeholders;
  batch.injected.push_back({.token_index = 3, .rows = *rows});
  batch.sequences.push_back({.num_tokens = static_cast<int64_t>(ids.size()), .start_position = 0,
                             .block_table = table});
  batch.logit_rows = {static_cast<int64_t>(ids.size()) - 1};
  Tensor logits;
  ASSERT_TRUE(model_->Forward(batch, cache.view, &logits).ok());
  EXPECT_LE(RelErr(Row(logits, 0), Row(*plain, ids.size() - 1)), 1e-6);

  // Other rows change the result.
  batch.injected[0].rows = Tensor::Zeros({3, model_->hidden_size()}, DType::kF32);
  ASSERT_TRUE(model_->Forward(batch, cache.view, &logits).ok());
  EXPECT_GT(RelErr(Row(logits, 0), Row(*plain, ids.size() - 1)), 1e-3);
}

TEST_P(HyperClovaxGoldenTest, RejectsBadBatches) {
  KvCacheStorage cache = KvCacheStorage::Allocate(model_->num_layers(), 2, model_->num_kv_heads(),
                                                  model_->head_dim(), DType::kF32);
  std::vector<int32_t> ids = {1, 2, 3};
  std::vector<int32_t> table = {1};
  ForwardBatch batch;
  batch.token_ids = ids;
  batch.sequences.push_back({.num_tokens = 3, .start_position = 0, .block_table = table});
  batch.logit_rows = {2};
  Tensor logits;
  ASSERT_TRUE(model_->Forward(batch, cache.view, &logits).ok());

  std::vector<int32_t> bad_ids = {1, static_cast<int32_t>(model_->vocab_size()), 3};
  ForwardBatch b1 = batch;
  b1.token_ids = bad_ids;
  EXPECT_EQ(model_->Forward(b1, cache.view, &logits).code(), StatusCode::kInvalidArgument);

  ForwardBatch b2 = batch;
  b2.sequences[0].start_position = 14;  // needs two blocks, the table has one
  EXPECT_EQ(model_->Forward(b2, cache.view, &logits).code(), StatusCode::kInvalidArgument);

  std::vector<int32_t> bad_table = {2};
  ForwardBatch b3 = batch;
  b3.sequences[0].block_table = bad_table;  // block 2 of a 2-block cache
  EXPECT_EQ(model_->Forward(b3, cache.view, &logits).code(), StatusCode::kInvalidArgument);

  ForwardBatch b4 = batch;
  b4.sequences[0].num_tokens = 2;  // does not cover the batch
  EXPECT_EQ(model_->Forward(b4, cache.view, &logits).code(), StatusCode::kInvalidArgument);

  KvCacheView short_view = cache.view;
  short_view.k.pop_back();
  EXPECT_EQ(model_->Forward(batch, short_view, &logits).code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(DemoModels, HyperClovaxGoldenTest,
                         ::testing::Values(Case{"llama_like", LlamaLikeDemoSpec()}, Case{"mup", MupDemoSpec()}),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(DemoModel, IsDeterministicAndLoadsAsHyperClovax) {
  const fs::path a = fs::path(::testing::TempDir()) / ("omni_demo_a_" + std::to_string(::getpid()));
  const fs::path b = fs::path(::testing::TempDir()) / ("omni_demo_b_" + std::to_string(::getpid()));
  DemoLlmSpec spec = MupDemoSpec();
  spec.tokenizer_json = "{\"version\":\"1.0\"}";
  ASSERT_TRUE(WriteDemoLlm(spec, a.string()).ok());
  ASSERT_TRUE(WriteDemoLlm(spec, b.string()).ok());
  EXPECT_EQ(ReadFile(a / "model.safetensors"), ReadFile(b / "model.safetensors"));
  EXPECT_EQ(ReadFile(a / "tokenizer.json"), *spec.tokenizer_json);
  auto config = LoadLlmConfig(a.string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->architecture, LlmArchitecture::kHyperClovaX);
  EXPECT_TRUE(config->use_post_norm);
  EXPECT_DOUBLE_EQ(config->attention_multiplier, 0.11);
  EXPECT_EQ(config->rope_scaling.type, RopeScalingType::kLlama3);
  spec.seed += 1;
  ASSERT_TRUE(WriteDemoLlm(spec, b.string()).ok());
  EXPECT_NE(ReadFile(a / "model.safetensors"), ReadFile(b / "model.safetensors"));
  fs::remove_all(a);
  fs::remove_all(b);
}

}  // namespace
}  // namespace omni::models

namespace omni::models {
namespace {

// Scaling types without an end-to-end golden: their defining properties.
TEST(RopeParamsForConfig, ScalingTypes) {
  LlmConfig c;
  c.head_dim = 16;
  c.rope_theta = 10000.0;
  c.max_position_embeddings = 4096;
  auto base = RopeParamsForConfig(c);
  ASSERT_TRUE(base.ok());
  const std::vector<float> def = base->inv_freq.ToFloats();
  ASSERT_EQ(def.size(), 8u);
  EXPECT_FLOAT_EQ(def[0], 1.f);
  EXPECT_FLOAT_EQ(def[1], static_cast<float>(1.0 / std::pow(10000.0, 2.0 / 16)));

  c.rope_scaling.type = RopeScalingType::kLinear;
  c.rope_scaling.factor = 4.0;
  auto linear = RopeParamsForConfig(c);
  ASSERT_TRUE(linear.ok());
  for (size_t i = 0; i < def.size(); ++i) EXPECT_FLOAT_EQ(linear->inv_freq.ToFloats()[i], def[i] / 4.f);

  c.rope_scaling.type = RopeScalingType::kDynamic;
  auto dynamic = RopeParamsForConfig(c);
  ASSERT_TRUE(dynamic.ok());
  EXPECT_EQ(dynamic->inv_freq.ToFloats(), def);

  // YaRN: high frequencies extrapolate (unchanged), low ones interpolate
  // (divided by factor); mscale 0.1 ln(factor) + 1.
  c.rope_scaling.type = RopeScalingType::kYarn;
  c.rope_scaling.original_max_position_embeddings = 1024;
  auto yarn = RopeParamsForConfig(c);
  ASSERT_TRUE(yarn.ok());
  const std::vector<float> y = yarn->inv_freq.ToFloats();
  EXPECT_FLOAT_EQ(y[0], def[0]);
  EXPECT_FLOAT_EQ(y[7], def[7] / 4.f);
  EXPECT_FLOAT_EQ(yarn->attention_scaling, static_cast<float>(0.1 * std::log(4.0) + 1.0));
}

}  // namespace
}  // namespace omni::models
