// Reader tests. Inputs are hand-built byte strings (8-byte little-endian
// length + JSON + data, per the format) and fixtures written by
// tools/modelfile/make_fixtures.py, an independent stdlib-Python writer.
#include "modelfile/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace omni {
namespace {

std::string TestData(const std::string& name) { return std::string(OMNI_MODELFILE_TESTDATA) + "/" + name; }

// The length prefix written out by hand, byte by byte.
std::string Le64(uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  return s;
}

std::string File(std::string_view json, std::string_view data = "") {
  return Le64(json.size()) + std::string(json) + std::string(data);
}

std::string Floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

StatusOr<SafetensorsFile> Parse(const std::string& bytes) { return SafetensorsFile::FromBuffer(bytes, "t.st"); }

TEST(SafetensorsReader, ReadsEveryDtypeFromReferenceFile) {
  auto file = SafetensorsFile::Open(TestData("all_dtypes.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->size(), 9u);
  EXPECT_EQ(file->Metadata("format"), "pt");
  EXPECT_EQ(file->Metadata("note"), "line\nbreak");
  EXPECT_EQ(file->Metadata("absent"), "");

  Tensor f32 = *file->Get("f32");
  EXPECT_EQ(f32.dtype(), DType::kF32);
  EXPECT_EQ(f32.shape(), (Shape{2, 3}));
  EXPECT_EQ(f32.ToFloats(), (std::vector<float>{0, 1, -2.5f, 3.25f, 1024, -0.125f}));

  Tensor bf16 = *file->Get("bf16");
  ASSERT_EQ(bf16.dtype(), DType::kBF16);
  const uint16_t bf16_bits[] = {0x3F80, 0xC000, 0x3F00, 0x4040};  // 1, -2, 0.5, 3
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bf16.data<bf16_t>()[i].bits, bf16_bits[i]);

  Tensor f16 = *file->Get("f16");
  ASSERT_EQ(f16.dtype(), DType::kF16);
  const uint16_t f16_bits[] = {0x3C00, 0xB800, 0x7BFF};  // 1, -0.5, 65504
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f16.data<f16_t>()[i].bits, f16_bits[i]);

  Tensor i32 = *file->Get("i32");
  EXPECT_EQ(std::vector<int32_t>(i32.data<int32_t>(), i32.data<int32_t>() + 4),
            (std::vector<int32_t>{1, -2, INT32_MAX, INT32_MIN}));
  Tensor i64 = *file->Get("i64");
  EXPECT_EQ(i64.data<int64_t>()[0], int64_t{1} << 40);
  EXPECT_EQ(i64.data<int64_t>()[1], -3);
  Tensor u8 = *file->Get("u8");
  EXPECT_EQ(std::vector<uint8_t>(u8.data<uint8_t>(), u8.data<uint8_t>() + 5),
            (std::vector<uint8_t>{0, 1, 127, 128, 255}));

  Tensor scalar = *file->Get("scalar");
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.GetFloat(0), 42.0f);
  Tensor empty = *file->Get("empty");
  EXPECT_EQ(empty.shape(), (Shape{0, 4}));
  EXPECT_EQ(empty.numel(), 0);

  Tensor escaped = *file->Get("name \"quoted\"\t\xC3\xBC");
  EXPECT_EQ(escaped.data<uint8_t>()[0], 7);
}

TEST(SafetensorsReader, ViewsAreZeroCopyAndKeepTheMappingAlive) {
  Tensor f32;
  {
    auto file = SafetensorsFile::Open(TestData("all_dtypes.safetensors"));
    ASSERT_TRUE(file.ok());
    auto bytes = file->bytes();
    for (const auto& info : file->header().tensors) {
      Tensor t = file->View(info);
      const uint8_t* p = static_cast<const uint8_t*>(t.raw_data());
      EXPECT_GE(p, bytes.data()) << info.name;
      EXPECT_LE(p + t.nbytes(), bytes.data() + bytes.size()) << info.name;
      EXPECT_EQ(p, bytes.data() + file->header().data_offset() + info.begin) << info.name;
    }
    f32 = *file->Get("f32");
  }
  // The SafetensorsFile is gone; the view still owns the mapping.
  EXPECT_EQ(f32.GetFloat(4), 1024.0f);
}

TEST(SafetensorsReader, HandBuiltFileAndFieldOrderAndWhitespace) {
  std::string json =
      "{\n  \"b\" : { \"data_offsets\" : [ 8 , 12 ], \"shape\" : [ ], \"dtype\" : \"I32\" } ,\n"
      "  \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}\n}\n\t ";
  int32_t seven = 7;
  std::string data = Floats({1.5f, -2.0f}) + std::string(reinterpret_cast<char*>(&seven), 4);
  auto file = Parse(File(json, data));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->Names(), (std::vector<std::string>{"b", "a"}));  // header order
  EXPECT_EQ(file->Get("a")->ToFloats(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(file->Get("b")->data<int32_t>()[0], 7);
  EXPECT_TRUE(file->header().metadata.empty());
}

TEST(SafetensorsReader, EmptyHeaderAndNullMetadata) {
  EXPECT_TRUE(Parse(File("{}")).ok());
  EXPECT_TRUE(Parse(File("{\"__metadata__\":null}")).ok());
  auto file = Parse(File("{\"__metadata__\":{}}      "));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->size(), 0u);
}

TEST(SafetensorsReader, UnicodeEscapesDecode) {
  auto file = Parse(File(R"({"\u00e9\ud83d\ude00\/":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->Contains("\xC3\xA9\xF0\x9F\x98\x80/"));
}

TEST(SafetensorsReader, UnalignedDataIsCopiedToAlignedMemory) {
  // Pad the header (with spaces, as allowed) so the F32 data start at an odd
  // offset from the buffer, which std::string allocates 16-byte aligned.
  std::string json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  while ((8 + json.size()) % 4 != 1) json += ' ';
  auto file = Parse(File(json, Floats({3.0f, 4.0f})));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Tensor a = *file->Get("a");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw_data()) % 4, 0u);
  EXPECT_EQ(a.ToFloats(), (std::vector<float>{3.0f, 4.0f}));
}

TEST(SafetensorsReader, GetMissingIsNotFoundNamingTensorAndFile) {
  auto file = Parse(File("{}"));
  ASSERT_TRUE(file.ok());
  auto t = file->Get("model.norm.weight");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("'model.norm.weight'"), std::string::npos);
  EXPECT_NE(t.status().message().find("t.st"), std::string::npos);
}

TEST(SafetensorsReader, OpenErrors) {
  auto missing = SafetensorsFile::Open("/nonexistent/x.safetensors");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto dir = SafetensorsFile::Open(OMNI_MODELFILE_TESTDATA);
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
  std::string empty = ::testing::TempDir() + "/empty_file.safetensors";
  std::ofstream(empty).close();
  auto e = SafetensorsFile::Open(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(empty + ": file is 0 bytes"), std::string::npos)
      << e.status().message();
}

struct BadCase {
  const char* label;
  std::string bytes;
  const char* expected;  // a substring of the message
  StatusCode code = StatusCode::kInvalidArgument;
};

std::string Entry(std::string_view name, std::string_view dtype, std::string_view shape,
                  std::string_view offsets) {
  return "\"" + std::string(name) + "\":{\"dtype\":\"" + std::string(dtype) + "\",\"shape\":" +
         std::string(shape) + ",\"data_offsets\":" + std::string(offsets) + "}";
}

std::vector<BadCase> BadCases() {
  std::string one = Entry("a", "F32", "[1]", "[0,4]");
  std::string four(4, '\0');
  return {
      {"short file", "abc", "file is 3 bytes, shorter than the 8-byte header length"},
      {"header length 1", Le64(1) + "{", "header length 1 is too small"},
      {"header length 0", Le64(0), "header length 0 is too small"},
      {"header over cap", Le64(100'000'001) + "{}", "exceeds the limit of 100000000 bytes"},
      {"header past eof", Le64(50) + "{}", "header length 50 runs past the end of the file (10 bytes)"},
      {"huge header length", Le64(UINT64_MAX) + "{}", "exceeds the limit"},
      {"not an object", File("[]"), "the header must start with '{'"},
      {"leading space", File(" {}"), "the header must start with '{'"},
      {"invalid json", File("{,}"), "invalid safetensors header: expected a string at byte 1"},
      {"unterminated", File("{\"a"), "unterminated string"},
      {"missing colon", File("{\"a\" 1}"), "expected ':' after a tensor name"},
      {"trailing comma", File("{" + one + ",}", four), "expected a string"},
      {"invalid utf8 name", File("{\"\xff\":1}"), "invalid UTF-8 in a string"},
      {"overlong utf8", File("{\"\xc0\xaf\":1}"), "invalid UTF-8"},
      {"utf8 surrogate", File("{\"\xed\xa0\x80\":1}"), "invalid UTF-8"},
      {"control char", File("{\"a\nb\":1}"), "unescaped control character"},
      {"lone high surrogate", File("{\"\\ud800\":1}"), "unpaired high surrogate"},
      {"lone low surrogate", File("{\"\\udc00\":1}"), "unpaired low surrogate"},
      {"bad escape", File("{\"\\x\":1}"), "invalid escape '\\x'"},
      {"trailing garbage", File("{}x"), "unexpected bytes after the header object"},
      {"nul padding", File(std::string("{}\0\0", 4)), "unexpected bytes after the header object"},
      {"two objects", File("{}{}"), "unexpected bytes after the header object"},
      {"entry not object", File("{\"a\":5}"), "tensor 'a': entry must be an object"},
      {"dtype not string", File("{\"a\":{\"dtype\":5}}"), "tensor 'a': dtype must be a string"},
      {"unknown dtype", File("{" + Entry("a", "F33", "[1]", "[0,4]") + "}", four),
       "tensor 'a': unknown dtype 'F33'"},
      {"unsupported dtype", File("{" + Entry("d", "F64", "[1]", "[0,8]") + "}", four + four),
       "tensor 'd': unsupported dtype F64", StatusCode::kUnimplemented},
      {"unsupported bool", File("{" + Entry("m", "BOOL", "[1]", "[0,1]") + "}", "x"),
       "tensor 'm': unsupported dtype BOOL", StatusCode::kUnimplemented},
      {"missing dtype", File("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", four),
       "tensor 'a': missing field 'dtype'"},
      {"missing shape", File("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", four),
       "tensor 'a': missing field 'shape'"},
      {"missing offsets", File("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", four),
       "tensor 'a': missing field 'data_offsets'"},
      {"unknown field",
       File("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"foo\":1}}", four),
       "tensor 'a': unknown field 'foo'"},
      {"duplicate field",
       File("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", four),
       "tensor 'a': duplicate field 'dtype'"},
      {"negative dim", File("{" + Entry("a", "F32", "[1,-2]", "[0,4]") + "}", four),
       "tensor 'a': shape[1] must be a non-negative integer, got '-2'"},
      {"fractional dim", File("{" + Entry("a", "F32", "[2.0]", "[0,8]") + "}", four + four),
       "tensor 'a': shape[0] must be an integer, got '2.0'"},
      {"exponent dim", File("{" + Entry("a", "F32", "[1e0]", "[0,4]") + "}", four),
       "tensor 'a': shape[0] must be an integer, got '1e0'"},
      {"string dim", File("{" + Entry("a", "F32", "[\"1\"]", "[0,4]") + "}", four),
       "tensor 'a': shape[0] must be a non-negative integer"},
      {"leading zero", File("{" + Entry("a", "F32", "[01]", "[0,4]") + "}", four), "leading zero"},
      {"shape not array", File("{" + Entry("a", "F32", "1", "[0,4]") + "}", four),
       "expected '[' to open shape"},
      {"dim above int64", File("{" + Entry("a", "U8", "[9223372036854775808]", "[0,1]") + "}", "x"),
       "tensor 'a': shape[0] '9223372036854775808' is too large"},
      {"numel overflow",
       File("{" + Entry("a", "F32", "[4294967296,4294967296]", "[0,0]") + "}"),
       "tensor 'a': shape [4294967296, 4294967296] has too many elements"},
      // Empty, but its strides would overflow (the fuzzer's input).
      {"empty with overflowing dims",
       File("{" + Entry("a", "I64", "[0,949672,9944624967293]", "[0,0]") + "}"),
       "tensor 'a': shape [0, 949672, 9944624967293] has too many elements"},
      {"nbytes overflow", File("{" + Entry("a", "F32", "[4611686018427387904]", "[0,0]") + "}"),
       "tensor 'a': shape [4611686018427387904] is too large in bytes"},
      {"offset above uint64",
       File("{" + Entry("a", "F32", "[1]", "[0,18446744073709551616]") + "}", four),
       "data_offsets[1] '18446744073709551616' is too large"},
      {"three offsets", File("{" + Entry("a", "F32", "[1]", "[0,4,4]") + "}", four),
       "tensor 'a': data_offsets must hold 2 integers [begin, end], got 3"},
      {"offsets reversed", File("{" + Entry("a", "F32", "[0]", "[4,0]") + "}", four),
       "tensor 'a': data_offsets [4, 0) end before they begin"},
      {"offsets past data", File("{" + Entry("a", "F32", "[2]", "[0,8]") + "}", four),
       "tensor 'a': data_offsets [0, 8) run past the end of the data section (4 bytes)"},
      {"size mismatch", File("{" + Entry("a", "F32", "[2]", "[0,4]") + "}", four),
       "tensor 'a': data_offsets [0, 4) hold 4 bytes, but F32 [2] needs 8"},
      {"overlap",
       File("{" + Entry("a", "U8", "[2]", "[0,2]") + "," + Entry("b", "U8", "[2]", "[1,3]") + "}", "xyz"),
       "tensor 'b' at [1, 3) overlaps tensor 'a' at [0, 2)"},
      {"gap",
       File("{" + Entry("a", "U8", "[1]", "[0,1]") + "," + Entry("b", "U8", "[1]", "[2,3]") + "}", "xyz"),
       "bytes [1, 2) of the data section belong to no tensor (gap before 'b')"},
      {"gap at start", File("{" + Entry("a", "U8", "[1]", "[1,2]") + "}", "xy"),
       "bytes [0, 1) of the data section belong to no tensor"},
      {"trailing data", File("{" + one + "}", four + "!"),
       "bytes [4, 5) at the end of the data section belong to no tensor"},
      {"duplicate name", File("{" + Entry("a", "U8", "[1]", "[0,1]") + "," + Entry("a", "U8", "[1]", "[1,2]") + "}", "xy"),
       "tensor name 'a' appears twice"},
      {"metadata not object", File("{\"__metadata__\":[]}"), "__metadata__ must be an object"},
      {"metadata value not string", File("{\"__metadata__\":{\"k\":1}}"),
       "__metadata__['k'] must be a string"},
      {"metadata duplicate key", File("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"),
       "__metadata__ has the key 'k' twice"},
      {"metadata twice", File("{\"__metadata__\":{},\"__metadata__\":{}}"), "__metadata__ appears twice"},
  };
}

TEST(SafetensorsReader, EveryMalformedHeaderHasItsOwnError) {
  for (const BadCase& c : BadCases()) {
    auto file = Parse(c.bytes);
    ASSERT_FALSE(file.ok()) << c.label;
    EXPECT_EQ(file.status().code(), c.code) << c.label << ": " << file.status().ToString();
    EXPECT_NE(file.status().message().find(c.expected), std::string::npos)
        << c.label << "\n  got:      " << file.status().message() << "\n  expected: " << c.expected;
    EXPECT_EQ(file.status().message().rfind("t.st: ", 0), 0u) << c.label << ": " << file.status().message();
  }
}

TEST(SafetensorsReader, ZeroSizeTensorsMayShareAnOffset) {
  std::string json = "{" + Entry("a", "F32", "[0]", "[0,0]") + "," + Entry("b", "U8", "[0,3]", "[0,0]") +
                     "," + Entry("c", "U8", "[1]", "[0,1]") + "}";
  auto file = Parse(File(json, "z"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->Get("b")->shape(), (Shape{0, 3}));
}

TEST(SafetensorsReader, LongNamesAreShortenedInMessages) {
  std::string name(5000, 'n');
  auto file = Parse(File("{\"" + name + "\":5}"));
  ASSERT_FALSE(file.ok());
  EXPECT_LT(file.status().message().size(), 300u);
  EXPECT_NE(file.status().message().find("...'"), std::string::npos);
}

}  // namespace
}  // namespace omni
