// Writer tests: byte equality with files from the independent Python writer
// (tools/modelfile/make_fixtures.py) and round trips through the reader.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "modelfile/checkpoint.h"
#include "modelfile/safetensors.h"

namespace omni {
namespace {

std::string TestData(const std::string& name) { return std::string(OMNI_MODELFILE_TESTDATA) + "/" + name; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename T>
Tensor Make(const Shape& shape, std::vector<T> values) {
  Tensor t = Tensor::Empty(shape, DTypeOf<T>());
  OMNI_CHECK_EQ(static_cast<int64_t>(values.size()), t.numel());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}

// The tensors of tests/data/modelfile/all_dtypes.safetensors, built from the
// same literal values as the Python script, deliberately in another order.
std::vector<NamedTensor> AllDtypes() {
  return {
      {"u8", Make<uint8_t>({5}, {0, 1, 127, 128, 255})},
      {"scalar", Make<float>({}, {42.0f})},
      {"i64", Make<int64_t>({2}, {int64_t{1} << 40, -3})},
      {"f16", Make<f16_t>({3}, {{0x3C00}, {0xB800}, {0x7BFF}})},
      {"name \"quoted\"\t\xC3\xBC", Make<uint8_t>({1}, {7})},
      {"empty", Tensor::Empty({0, 4}, DType::kF32)},
      {"f32", Make<float>({2, 3}, {0, 1, -2.5f, 3.25f, 1024, -0.125f})},
      {"i32", Make<int32_t>({2, 2}, {1, -2, INT32_MAX, INT32_MIN})},
      {"bf16", Make<bf16_t>({2, 2}, {{0x3F80}, {0xC000}, {0x3F00}, {0x4040}})},
  };
}

TEST(SafetensorsWriter, BytesEqualTheReferenceWriter) {
  auto bytes = SerializeSafetensors(AllDtypes(), {{"note", "line\nbreak"}, {"format", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, ReadFile(TestData("all_dtypes.safetensors")));

  auto empty = SerializeSafetensors({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, ReadFile(TestData("empty.safetensors")));
  EXPECT_EQ(*empty, std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
}

TEST(SafetensorsWriter, RewritingAReferenceCheckpointIsByteIdentical) {
  auto ckpt = Checkpoint::Open(TestData("llama_single"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  std::vector<NamedTensor> tensors;
  for (const std::string& name : ckpt->Names()) tensors.push_back({name, *ckpt->Get(name)});
  auto bytes = SerializeSafetensors(tensors, {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, ReadFile(TestData("llama_single/model.safetensors")));
}

TEST(SafetensorsWriter, HeaderIsPaddedToEightBytes) {
  for (int len = 1; len <= 9; ++len) {
    auto bytes = SerializeSafetensors({{std::string(len, 'x'), Make<uint8_t>({1}, {9})}});
    ASSERT_TRUE(bytes.ok());
    uint64_t n = 0;
    std::memcpy(&n, bytes->data(), 8);
    EXPECT_EQ(n % 8, 0u);
    EXPECT_EQ(bytes->size(), 8 + n + 1);
    EXPECT_EQ(bytes->back(), 9);
  }
}

TEST(SafetensorsWriter, FileRoundTripIsAtomicAndReadable) {
  std::string dir = ::testing::TempDir() + "/st_writer_roundtrip";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = dir + "/out.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, {{"old", Make<uint8_t>({1}, {1})}}).ok());

  std::vector<float> values(3 * 5);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f - 1;
  Tensor t = Make<float>({3, 5}, values);
  Tensor transposed = t.Transpose(0, 1);  // strided: written contiguous
  std::vector<NamedTensor> tensors = {{"t", t}, {"tt", transposed}, {"ids", Make<int32_t>({3}, {4, 5, 6})}};
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"k", "v"}}).ok());

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_FALSE(file->Contains("old"));
  EXPECT_EQ(file->Metadata("k"), "v");
  EXPECT_EQ(file->Get("t")->ToFloats(), values);
  EXPECT_EQ(file->Get("tt")->shape(), (Shape{5, 3}));
  EXPECT_EQ(file->Get("tt")->ToFloats(), transposed.ToFloats());
  EXPECT_EQ(file->Get("ids")->data<int32_t>()[2], 6);

  // No temporary file is left behind, and the file is readable by others.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "out.safetensors");
  }
  EXPECT_EQ(entries, 1);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(SafetensorsWriter, RejectsBadInput) {
  Tensor one = Make<uint8_t>({1}, {1});
  auto dup = SerializeSafetensors({{"a", one}, {"a", one}});
  EXPECT_NE(dup.status().message().find("tensor 'a' given twice"), std::string::npos);
  auto reserved = SerializeSafetensors({{"__metadata__", one}});
  EXPECT_NE(reserved.status().message().find("reserved"), std::string::npos);
  auto utf8 = SerializeSafetensors({{"\xff", one}});
  EXPECT_NE(utf8.status().message().find("not valid UTF-8"), std::string::npos);
  auto meta = SerializeSafetensors({}, {{"k", "\xc0\x80"}});
  EXPECT_NE(meta.status().message().find("metadata is not valid UTF-8"), std::string::npos);
  auto undefined = SerializeSafetensors({{"u", Tensor()}});
  EXPECT_NE(undefined.status().message().find("tensor 'u' is undefined"), std::string::npos);

  Status no_dir = WriteSafetensors("/nonexistent-dir/x.safetensors", {{"a", one}});
  EXPECT_EQ(no_dir.code(), StatusCode::kInternal);
  EXPECT_NE(no_dir.message().find("/nonexistent-dir/x.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace omni
