#include "modelfile/tensor_object.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "modelfile/safetensors.h"
#include "storage/content_hash.h"
#include "storage/fs_store.h"

namespace omni {
namespace {

namespace fs = std::filesystem;

Tensor Ids(std::vector<int32_t> values) {
  Tensor t = Tensor::Empty({static_cast<int64_t>(values.size())}, DType::kI32);
  std::copy(values.begin(), values.end(), t.data<int32_t>());
  return t;
}

Tensor Rows(DType dtype, int64_t n, int64_t d) {
  std::vector<float> values(static_cast<size_t>(n * d));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 3.0f;
  return Tensor::FromFloats(values, {n, d}, dtype);
}

class TensorObjectTest : public ::testing::TestWithParam<DType> {};

TEST_P(TensorObjectTest, RoundTripsRowsIdsAndMetadata) {
  EmbeddingObject object{.rows = Rows(GetParam(), 3, 4),
                         .ids = Ids({7, -1, 123456}),
                         .metadata = {{"model", "org/siglip"}, {"input_sha256", Sha256Hex("img")}}};
  auto bytes = SerializeEmbeddingObject(object);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto parsed = ParseEmbeddingObject(*bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->rows.dtype(), GetParam());
  EXPECT_EQ(parsed->rows.shape(), (Shape{3, 4}));
  EXPECT_EQ(parsed->rows.ToFloats(), object.rows.ToFloats());
  EXPECT_EQ(parsed->ids.shape(), (Shape{3}));
  EXPECT_EQ(parsed->ids.ToFloats(), (std::vector<float>{7, -1, 123456}));
  // Metadata come back sorted by name.
  EXPECT_EQ(parsed->metadata, (std::vector<std::pair<std::string, std::string>>{
                                  {"input_sha256", Sha256Hex("img")}, {"model", "org/siglip"}}));
  // Any safetensors reader sees the same file.
  auto file = SafetensorsFile::FromBuffer(*bytes);
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->Contains("rows"));
  EXPECT_TRUE(file->Contains("ids"));
  EXPECT_EQ(file->Metadata("model"), "org/siglip");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TensorObjectTest, ::testing::Values(DType::kBF16, DType::kF32));

TEST(TensorObjectParseTest, ViewsPointIntoTheOwnedBuffer) {
  EmbeddingObject object{.rows = Rows(DType::kF32, 64, 16)};
  std::string bytes = *SerializeEmbeddingObject(object);
  const char* heap = bytes.data();  // a long string moves its heap buffer along
  size_t size = bytes.size();
  auto parsed = ParseEmbeddingObject(std::move(bytes));
  ASSERT_TRUE(parsed.ok());
  const char* rows = static_cast<const char*>(parsed->rows.raw_data());
  EXPECT_GE(rows, heap);
  EXPECT_LT(rows, heap + size);
  EXPECT_FALSE(parsed->ids.defined());
  EXPECT_EQ(parsed->rows.ToFloats(), object.rows.ToFloats());
}

TEST(TensorObjectParseTest, EmptyPartsAreAllowed) {
  auto only_ids = ParseEmbeddingObject(*SerializeEmbeddingObject({.ids = Ids({1, 2})}));
  ASSERT_TRUE(only_ids.ok());
  EXPECT_FALSE(only_ids->rows.defined());
  auto zero_rows = ParseEmbeddingObject(*SerializeEmbeddingObject({.rows = Tensor::Empty({0, 8}, DType::kBF16)}));
  ASSERT_TRUE(zero_rows.ok()) << zero_rows.status().ToString();
  EXPECT_EQ(zero_rows->rows.shape(), (Shape{0, 8}));
  auto nothing = ParseEmbeddingObject(*SerializeEmbeddingObject({}));
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->rows.defined());
  EXPECT_FALSE(nothing->ids.defined());
}

TEST(TensorObjectParseTest, RejectsWrongDtypesAndRanks) {
  auto code = [](const EmbeddingObject& o) { return SerializeEmbeddingObject(o).status().code(); };
  EXPECT_EQ(code({.rows = Rows(DType::kF16, 2, 2)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.rows = Tensor::FromFloats(std::vector<float>{1, 2}, {2}, DType::kF32)}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.rows = Tensor::Zeros({1, 2, 3}, DType::kF32)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.ids = Tensor::Zeros({2}, DType::kI64)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.ids = Tensor::Zeros({2, 1}, DType::kI32)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.metadata = {{"a", "1"}, {"a", "2"}}}), StatusCode::kInvalidArgument);

  // Files written by someone else: same checks on the way in.
  auto parse_code = [](const std::vector<NamedTensor>& tensors) {
    return ParseEmbeddingObject(*SerializeSafetensors(tensors)).status().code();
  };
  EXPECT_EQ(parse_code({{"rows", Tensor::Zeros({4}, DType::kF32)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_code({{"rows", Tensor::Zeros({2, 2}, DType::kU8)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_code({{"ids", Tensor::Zeros({3}, DType::kF32)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_code({{"embeddings", Tensor::Zeros({2, 2}, DType::kF32)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseEmbeddingObject("not a safetensors file").status().code(), StatusCode::kInvalidArgument);
}

TEST(TensorObjectStoreTest, PutAndGetThroughAStore) {
  std::string tmpl = (fs::temp_directory_path() / "tensor_object_test.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  {
    auto store = FsStore::Open("file://" + tmpl, {.sync = false});
    ASSERT_TRUE(store.ok());
    auto key = EmbeddingKey("org/model", Sha256Hex("input"));
    ASSERT_TRUE(key.ok());
    EmbeddingObject object{.rows = Rows(DType::kBF16, 5, 3), .ids = Ids({1, 2, 3, 4, 5}), .metadata = {{"k", "v"}}};
    ASSERT_TRUE(PutEmbeddingObject(**store, *key, object).ok());
    auto got = GetEmbeddingObject(**store, *key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->rows.ToFloats(), object.rows.ToFloats());
    EXPECT_EQ(got->ids.ToFloats(), object.ids.ToFloats());
    EXPECT_EQ(got->metadata, object.metadata);
    EXPECT_EQ(GetEmbeddingObject(**store, "emb/none").status().code(), StatusCode::kNotFound);
    ASSERT_TRUE((*store)->Put("emb/garbage", "xx").ok());
    EXPECT_EQ(GetEmbeddingObject(**store, "emb/garbage").status().code(), StatusCode::kInvalidArgument);
  }
  std::error_code ec;
  fs::remove_all(tmpl, ec);
}

TEST(EmbeddingKeyTest, Shape) {
  const std::string sha = Sha256Hex("abc");
  EXPECT_EQ(*EmbeddingKey("org/name", sha), "emb/org--name/" + sha + ".safetensors");
  EXPECT_EQ(*EmbeddingKey("Qwen/Qwen2.5-VL-7B-Instruct", sha), "emb/Qwen--Qwen2.5-VL-7B-Instruct/" + sha + ".safetensors");
  EXPECT_EQ(*EmbeddingKey("local_model", sha), "emb/local_model/" + sha + ".safetensors");
  for (const std::string& bad : std::vector<std::string>{"", "a--b", "a/../b", "../x", "/abs", "org/", "org//name", "org/-name", "org-/name", ".hidden",
                          "a b", "a:b", "https://example.com/model", std::string(257, 'm')}) {
    EXPECT_EQ(EmbeddingKey(bad, sha).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(EmbeddingKey("org/name", "ABC").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EmbeddingKey("org/name", std::string(64, 'A')).status().code(), StatusCode::kInvalidArgument);
  // The longest model id still makes a valid key.
  std::string longest(kMaxModelIdBytes, 'm');
  auto key = EmbeddingKey(longest, sha);
  ASSERT_TRUE(key.ok());
  EXPECT_TRUE(ValidateObjectKey(*key).ok());
}

}  // namespace
}  // namespace omni
