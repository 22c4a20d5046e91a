#include "modelfile/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace omni {
namespace {

namespace fs = std::filesystem;

std::string TestData(const std::string& name) { return std::string(OMNI_MODELFILE_TESTDATA) + "/" + name; }

const std::vector<std::string> kLlamaNames = {
    "lm_head.weight",
    "model.embed_tokens.weight",
    "model.layers.0.input_layernorm.weight",
    "model.layers.0.mlp.down_proj.weight",
    "model.layers.0.mlp.gate_proj.weight",
    "model.layers.0.mlp.up_proj.weight",
    "model.layers.0.post_attention_layernorm.weight",
    "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.o_proj.weight",
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.v_proj.weight",
    "model.norm.weight",
};

TEST(Checkpoint, OpensASingleFileFolder) {
  auto ckpt = Checkpoint::Open(TestData("llama_single"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ(ckpt->num_shards(), 1u);
  EXPECT_EQ(ckpt->Names(), kLlamaNames);
  EXPECT_EQ(ckpt->Get("model.norm.weight")->ToFloats(), (std::vector<float>{1, 2, 3, 4}));
  // ramp(): ((i % 9) - 4) * 0.5 * scale, scale -1 for lm_head.
  Tensor head = *ckpt->Get("lm_head.weight");
  EXPECT_EQ(head.GetFloat(0), 2.0f);
  EXPECT_EQ(head.GetFloat(10), 1.5f);
}

TEST(Checkpoint, OpensAShardedFolderWithTheSameContents) {
  auto sharded = Checkpoint::Open(TestData("llama_sharded"));
  ASSERT_TRUE(sharded.ok()) << sharded.status().ToString();
  auto single = Checkpoint::Open(TestData("llama_single"));
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(sharded->num_shards(), 2u);
  EXPECT_EQ(sharded->Names(), kLlamaNames);
  for (const std::string& name : kLlamaNames) {
    Tensor a = *sharded->Get(name), b = *single->Get(name);
    EXPECT_EQ(a.shape(), b.shape()) << name;
    EXPECT_EQ(a.dtype(), b.dtype()) << name;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << name;
  }
  EXPECT_EQ(sharded->Info("lm_head.weight")->shape, (Shape{8, 4}));
  EXPECT_EQ(sharded->Info("nope"), nullptr);
}

TEST(Checkpoint, NotFoundNamesTensorAndFolder) {
  auto ckpt = Checkpoint::Open(TestData("llama_sharded"));
  ASSERT_TRUE(ckpt.ok());
  auto t = ckpt->Get("model.layers.1.mlp.up_proj.weight");
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("'model.layers.1.mlp.up_proj.weight'"), std::string::npos);
  EXPECT_NE(t.status().message().find("llama_sharded"), std::string::npos);
}

TEST(Checkpoint, GetCheckedComparesShapeAndDtype) {
  auto ckpt = Checkpoint::Open(TestData("llama_single"));
  ASSERT_TRUE(ckpt.ok());
  EXPECT_TRUE(ckpt->GetChecked("model.embed_tokens.weight", {8, 4}, DType::kBF16).ok());
  EXPECT_TRUE(ckpt->GetChecked("model.embed_tokens.weight", {-1, 4}, DType::kBF16).ok());
  auto shape = ckpt->GetChecked("model.embed_tokens.weight", {8, 5}, DType::kBF16);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find(
                "tensor 'model.embed_tokens.weight' is BF16 [8, 4], expected BF16 [8, 5]"),
            std::string::npos)
      << shape.status().message();
  auto dtype = ckpt->GetChecked("model.norm.weight", {4}, DType::kBF16);
  EXPECT_NE(dtype.status().message().find("is F32 [4], expected BF16 [4]"), std::string::npos);
  auto rank = ckpt->GetChecked("model.norm.weight", {4, 1}, DType::kF32);
  EXPECT_FALSE(rank.ok());
}

// A scratch copy of the sharded fixture whose index the test may rewrite.
std::string ScratchSharded(const std::string& name, const std::string& index_json) {
  std::string dir = ::testing::TempDir() + "/ckpt_" + name;
  fs::remove_all(dir);
  fs::copy(TestData("llama_sharded"), dir);
  if (!index_json.empty()) std::ofstream(dir + "/model.safetensors.index.json") << index_json;
  return dir;
}

Status OpenStatus(const std::string& dir) { return Checkpoint::Open(dir).status(); }

TEST(Checkpoint, IndexErrors) {
  const std::string s1 = "\"model-00001-of-00002.safetensors\"";
  const std::string s2 = "\"model-00002-of-00002.safetensors\"";
  std::string rest;  // every model.* tensor in shard 1
  for (const std::string& n : kLlamaNames) {
    if (n != "lm_head.weight") rest += ",\"" + n + "\":" + s1;
  }

  Status no_files = OpenStatus(::testing::TempDir());
  EXPECT_EQ(no_files.code(), StatusCode::kNotFound);
  EXPECT_NE(no_files.message().find("no model.safetensors or model.safetensors.index.json in"),
            std::string::npos);

  Status missing_map = OpenStatus(ScratchSharded("missing_map", "{\"metadata\":{}}"));
  EXPECT_NE(missing_map.message().find("weight_map: required field is missing"), std::string::npos)
      << missing_map.message();

  Status bad_json = OpenStatus(ScratchSharded("bad_json", "{\"weight_map\":"));
  EXPECT_NE(bad_json.message().find("invalid JSON"), std::string::npos) << bad_json.message();

  Status traversal = OpenStatus(ScratchSharded(
      "traversal", "{\"weight_map\":{\"lm_head.weight\":\"../model-00002-of-00002.safetensors\"" + rest + "}}"));
  EXPECT_NE(traversal.message().find("weight_map.lm_head.weight: shard '../model-00002-of-00002.safetensors' "
                                     "must be a plain file name"),
            std::string::npos)
      << traversal.message();

  Status not_string = OpenStatus(ScratchSharded("not_string", "{\"weight_map\":{\"lm_head.weight\":3}}"));
  EXPECT_NE(not_string.message().find("weight_map.lm_head.weight: expected a shard file name"),
            std::string::npos);

  Status missing_shard = OpenStatus(ScratchSharded(
      "missing_shard", "{\"weight_map\":{\"lm_head.weight\":\"model-00003.safetensors\"" + rest + "}}"));
  EXPECT_EQ(missing_shard.code(), StatusCode::kNotFound);
  EXPECT_NE(missing_shard.message().find("model-00003.safetensors"), std::string::npos);

  Status wrong_shard = OpenStatus(ScratchSharded(
      "wrong_shard", "{\"weight_map\":{\"lm_head.weight\":" + s1 + rest + "}}"));
  EXPECT_NE(wrong_shard.message().find("maps tensor 'lm_head.weight' to model-00001-of-00002.safetensors, "
                                       "which does not contain it"),
            std::string::npos)
      << wrong_shard.message();

  Status unlisted = OpenStatus(ScratchSharded("unlisted", "{\"weight_map\":{\"lm_head.weight\":" + s2 +
                                                              ",\"model.norm.weight\":" + s1 + "}}"));
  EXPECT_NE(unlisted.message().find("which"), std::string::npos);
  EXPECT_NE(unlisted.message().find("does not map to that file"), std::string::npos) << unlisted.message();
}

TEST(Checkpoint, SingleFileWinsOverIndex) {
  std::string dir = ScratchSharded("both", "");
  fs::copy_file(TestData("llama_single/model.safetensors"), dir + "/model.safetensors");
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok());
  EXPECT_EQ(ckpt->num_shards(), 1u);
}

TEST(Checkpoint, CorruptShardReportsTheShard) {
  std::string dir = ScratchSharded("corrupt", "");
  fs::resize_file(dir + "/model-00002-of-00002.safetensors", 100);
  Status s = OpenStatus(dir);
  EXPECT_NE(s.message().find("model-00002-of-00002.safetensors: "), std::string::npos) << s.message();
}

}  // namespace
}  // namespace omni
