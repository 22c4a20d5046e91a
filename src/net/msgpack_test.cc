#include "net/msgpack.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace omni {
namespace {

// Byte vectors below are written by hand from the msgpack spec's format table.
std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

template <typename Fn>
std::string Write(Fn fn) {
  MsgpackWriter w;
  fn(w);
  return std::move(w).Take();
}

MsgpackValue MustDecode(std::string_view bytes) {
  StatusOr<MsgpackValue> v = DecodeMsgpack(bytes);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : MsgpackValue{};
}

TEST(MsgpackWriterTest, NilAndBool) {
  EXPECT_EQ(Write([](auto& w) { w.Nil(); }), Bytes({0xc0}));
  EXPECT_EQ(Write([](auto& w) { w.Bool(false); }), Bytes({0xc2}));
  EXPECT_EQ(Write([](auto& w) { w.Bool(true); }), Bytes({0xc3}));
}

TEST(MsgpackWriterTest, UnsignedPicksSmallestFormat) {
  EXPECT_EQ(Write([](auto& w) { w.Uint(0); }), Bytes({0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(127); }), Bytes({0x7f}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(128); }), Bytes({0xcc, 0x80}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(255); }), Bytes({0xcc, 0xff}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(256); }), Bytes({0xcd, 0x01, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(65535); }), Bytes({0xcd, 0xff, 0xff}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(65536); }), Bytes({0xce, 0x00, 0x01, 0x00, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(0xffffffffu); }), Bytes({0xce, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(0x100000000ull); }),
            Bytes({0xcf, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Uint(std::numeric_limits<uint64_t>::max()); }),
            Bytes({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST(MsgpackWriterTest, SignedPicksSmallestFormat) {
  EXPECT_EQ(Write([](auto& w) { w.Int(5); }), Bytes({0x05}));  // non-negative: unsigned formats
  EXPECT_EQ(Write([](auto& w) { w.Int(200); }), Bytes({0xcc, 0xc8}));
  EXPECT_EQ(Write([](auto& w) { w.Int(-1); }), Bytes({0xff}));
  EXPECT_EQ(Write([](auto& w) { w.Int(-32); }), Bytes({0xe0}));
  EXPECT_EQ(Write([](auto& w) { w.Int(-33); }), Bytes({0xd0, 0xdf}));
  EXPECT_EQ(Write([](auto& w) { w.Int(-128); }), Bytes({0xd0, 0x80}));
  EXPECT_EQ(Write([](auto& w) { w.Int(-129); }), Bytes({0xd1, 0xff, 0x7f}));
  EXPECT_EQ(Write([](auto& w) { w.Int(-32768); }), Bytes({0xd1, 0x80, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Int(-32769); }), Bytes({0xd2, 0xff, 0xff, 0x7f, 0xff}));
  EXPECT_EQ(Write([](auto& w) { w.Int(std::numeric_limits<int32_t>::min()); }),
            Bytes({0xd2, 0x80, 0x00, 0x00, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Int(int64_t{std::numeric_limits<int32_t>::min()} - 1); }),
            Bytes({0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff}));
  EXPECT_EQ(Write([](auto& w) { w.Int(std::numeric_limits<int64_t>::min()); }),
            Bytes({0xd3, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));
}

TEST(MsgpackWriterTest, Floats) {
  EXPECT_EQ(Write([](auto& w) { w.Float(1.5f); }), Bytes({0xca, 0x3f, 0xc0, 0x00, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Double(1.5); }),
            Bytes({0xcb, 0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.Double(-2.0); }),
            Bytes({0xcb, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));
}

TEST(MsgpackWriterTest, Strings) {
  EXPECT_EQ(Write([](auto& w) { w.Str(""); }), Bytes({0xa0}));
  EXPECT_EQ(Write([](auto& w) { w.Str("abc"); }), Bytes({0xa3, 'a', 'b', 'c'}));
  std::string s31(31, 'x'), s32(32, 'x'), s256(256, 'x'), s65536(65536, 'x');
  EXPECT_EQ(Write([&](auto& w) { w.Str(s31); }), Bytes({0xbf}) + s31);
  EXPECT_EQ(Write([&](auto& w) { w.Str(s32); }), Bytes({0xd9, 0x20}) + s32);
  EXPECT_EQ(Write([&](auto& w) { w.Str(s256); }), Bytes({0xda, 0x01, 0x00}) + s256);
  EXPECT_EQ(Write([&](auto& w) { w.Str(s65536); }), Bytes({0xdb, 0x00, 0x01, 0x00, 0x00}) + s65536);
}

TEST(MsgpackWriterTest, Binaries) {
  std::vector<uint8_t> two = {0xde, 0xad};
  EXPECT_EQ(Write([&](auto& w) { w.Bin(two); }), Bytes({0xc4, 0x02, 0xde, 0xad}));
  std::vector<uint8_t> b256(256, 7);
  std::string out = Write([&](auto& w) { w.Bin(b256); });
  EXPECT_EQ(out.substr(0, 3), Bytes({0xc5, 0x01, 0x00}));
  EXPECT_EQ(out.size(), 3u + 256u);
  std::vector<uint8_t> b65536(65536, 7);
  EXPECT_EQ(Write([&](auto& w) { w.Bin(b65536); }).substr(0, 5), Bytes({0xc6, 0x00, 0x01, 0x00, 0x00}));
}

TEST(MsgpackWriterTest, ContainerHeaders) {
  EXPECT_EQ(Write([](auto& w) { w.ArrayHeader(0); }), Bytes({0x90}));
  EXPECT_EQ(Write([](auto& w) { w.ArrayHeader(15); }), Bytes({0x9f}));
  EXPECT_EQ(Write([](auto& w) { w.ArrayHeader(16); }), Bytes({0xdc, 0x00, 0x10}));
  EXPECT_EQ(Write([](auto& w) { w.ArrayHeader(65536); }), Bytes({0xdd, 0x00, 0x01, 0x00, 0x00}));
  EXPECT_EQ(Write([](auto& w) { w.MapHeader(1); }), Bytes({0x81}));
  EXPECT_EQ(Write([](auto& w) { w.MapHeader(16); }), Bytes({0xde, 0x00, 0x10}));
  EXPECT_EQ(Write([](auto& w) { w.MapHeader(65536); }), Bytes({0xdf, 0x00, 0x01, 0x00, 0x00}));
}

TEST(MsgpackWriterTest, SpecExampleCompactTrueSchemaZero) {
  // The spec's README example: {"compact": true, "schema": 0}.
  std::string out = Write([](auto& w) { w.MapHeader(2).Str("compact").Bool(true).Str("schema").Uint(0); });
  EXPECT_EQ(out, Bytes({0x82, 0xa7, 'c', 'o', 'm', 'p', 'a', 'c', 't', 0xc3, 0xa6, 's', 'c', 'h', 'e', 'm', 'a',
                        0x00}));
}

TEST(MsgpackDecodeTest, Scalars) {
  EXPECT_TRUE(MustDecode(Bytes({0xc0})).is_nil());
  EXPECT_EQ(MustDecode(Bytes({0xc2})), MsgpackValue{false});
  EXPECT_EQ(MustDecode(Bytes({0xc3})), MsgpackValue{true});
  EXPECT_EQ(MustDecode(Bytes({0x7f})).AsUint64(), 127u);
  EXPECT_EQ(MustDecode(Bytes({0xe0})).AsInt64(), -32);
  EXPECT_EQ(MustDecode(Bytes({0xff})).AsInt64(), -1);
  EXPECT_EQ(MustDecode(Bytes({0xcc, 0xff})).AsUint64(), 255u);
  EXPECT_EQ(MustDecode(Bytes({0xcd, 0x12, 0x34})).AsUint64(), 0x1234u);
  EXPECT_EQ(MustDecode(Bytes({0xce, 0x12, 0x34, 0x56, 0x78})).AsUint64(), 0x12345678u);
  EXPECT_EQ(MustDecode(Bytes({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe})).AsUint64(),
            0xfffffffffffffffeull);
  EXPECT_EQ(MustDecode(Bytes({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe})).AsInt64(), std::nullopt);
  EXPECT_EQ(MustDecode(Bytes({0xd0, 0x80})).AsInt64(), -128);
  EXPECT_EQ(MustDecode(Bytes({0xd1, 0xff, 0x7f})).AsInt64(), -129);
  EXPECT_EQ(MustDecode(Bytes({0xd2, 0x80, 0x00, 0x00, 0x00})).AsInt64(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(MustDecode(Bytes({0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})).AsInt64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(MustDecode(Bytes({0xca, 0x3f, 0xc0, 0x00, 0x00})).AsDouble(), 1.5);
  EXPECT_EQ(MustDecode(Bytes({0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0})).AsDouble(), 1.5);
  EXPECT_TRUE(std::isnan(*MustDecode(Bytes({0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0})).AsDouble()));
}

TEST(MsgpackDecodeTest, SignedFormatsWithNonNegativeValuesNormalizeToUnsigned) {
  MsgpackValue a = MustDecode(Bytes({0xd0, 0x05}));
  MsgpackValue b = MustDecode(Bytes({0x05}));
  EXPECT_EQ(a, b);
  EXPECT_EQ(MustDecode(Bytes({0xd3, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})).AsInt64(),
            std::numeric_limits<int64_t>::max());
}

TEST(MsgpackDecodeTest, StringsAndBinaries) {
  EXPECT_EQ(*MustDecode(Bytes({0xa0})).str(), "");
  EXPECT_EQ(*MustDecode(Bytes({0xa3, 'a', 'b', 'c'})).str(), "abc");
  EXPECT_EQ(*MustDecode(Bytes({0xd9, 0x02, 'h', 'i'})).str(), "hi");
  EXPECT_EQ(*MustDecode(Bytes({0xda, 0x00, 0x02, 'h', 'i'})).str(), "hi");
  EXPECT_EQ(*MustDecode(Bytes({0xdb, 0x00, 0x00, 0x00, 0x02, 'h', 'i'})).str(), "hi");
  EXPECT_EQ(MustDecode(Bytes({0xc4, 0x02, 0xde, 0xad})).bin()->bytes, Bytes({0xde, 0xad}));
  EXPECT_EQ(MustDecode(Bytes({0xc5, 0x00, 0x01, 0x07})).bin()->bytes, Bytes({0x07}));
  EXPECT_EQ(MustDecode(Bytes({0xc6, 0x00, 0x00, 0x00, 0x00})).bin()->bytes, "");
  // str and bin are distinct types.
  EXPECT_EQ(MustDecode(Bytes({0xc4, 0x00})).str(), nullptr);
}

TEST(MsgpackDecodeTest, Containers) {
  MsgpackValue arr = MustDecode(Bytes({0x93, 0x01, 0xc0, 0xa1, 'x'}));
  ASSERT_NE(arr.array(), nullptr);
  ASSERT_EQ(arr.array()->size(), 3u);
  EXPECT_EQ((*arr.array())[0].AsUint64(), 1u);
  EXPECT_TRUE((*arr.array())[1].is_nil());
  EXPECT_EQ(*(*arr.array())[2].str(), "x");

  std::string a16 = Bytes({0xdc, 0x00, 0x10});
  for (int i = 0; i < 16; ++i) a16.push_back(static_cast<char>(i));
  EXPECT_EQ(MustDecode(a16).array()->size(), 16u);
  EXPECT_EQ(MustDecode(Bytes({0xdd, 0x00, 0x00, 0x00, 0x01, 0x07})).array()->size(), 1u);

  MsgpackValue map = MustDecode(Bytes({0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0xc2, 0xc3}));
  ASSERT_NE(map.map(), nullptr);
  EXPECT_EQ(map.Find("a")->AsUint64(), 1u);
  EXPECT_EQ(map.Find("b")->array()->size(), 2u);
  EXPECT_EQ(map.Find("c"), nullptr);
  EXPECT_EQ(MustDecode(Bytes({0xde, 0x00, 0x01, 0x01, 0x02})).map()->size(), 1u);
  EXPECT_EQ(MustDecode(Bytes({0xdf, 0x00, 0x00, 0x00, 0x00})).map()->size(), 0u);
  // Keys of any type are allowed by the spec.
  EXPECT_EQ(MustDecode(Bytes({0x81, 0x01, 0x02})).map()->size(), 1u);
}

TEST(MsgpackDecodeTest, EncodeDecodeRoundTrip) {
  MsgpackWriter w;
  w.ArrayHeader(9).Nil().Bool(true).Int(-100000).Uint(1ull << 63).Double(0.25).Str("héllo");
  std::vector<uint8_t> bin = {1, 2, 3};
  w.Bin(bin).MapHeader(1).Str("k").ArrayHeader(0).Float(2.5f);
  MsgpackValue v = MustDecode(w.bytes());
  MsgpackWriter again;
  EncodeMsgpack(v, again);
  // The float 32 is widened to float 64 when re-encoded; everything else is byte-identical.
  EXPECT_EQ(MustDecode(again.bytes()), v);
  EXPECT_EQ(again.bytes().substr(0, w.bytes().size() - 5), w.bytes().substr(0, w.bytes().size() - 5));
}

void ExpectError(std::string_view bytes, StatusCode code, std::string_view needle,
                 const MsgpackLimits& limits = {}) {
  StatusOr<MsgpackValue> v = DecodeMsgpack(bytes, limits);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), code) << v.status().ToString();
  EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().message();
}

TEST(MsgpackDecodeTest, RejectsTruncatedInput) {
  ExpectError("", StatusCode::kInvalidArgument, "truncated value at offset 0");
  ExpectError(Bytes({0xcd, 0x01}), StatusCode::kInvalidArgument, "truncated uint at offset 0");
  ExpectError(Bytes({0xcb, 0, 0, 0}), StatusCode::kInvalidArgument, "truncated float 64");
  ExpectError(Bytes({0xa3, 'a'}), StatusCode::kInvalidArgument, "truncated fixstr");
  ExpectError(Bytes({0xd9}), StatusCode::kInvalidArgument, "truncated str length");
  ExpectError(Bytes({0xc4, 0x05, 1}), StatusCode::kInvalidArgument, "truncated bin");
  ExpectError(Bytes({0x92, 0x01}), StatusCode::kInvalidArgument, "declares 2 entries");
  ExpectError(Bytes({0x92, 0x01, 0xcd}), StatusCode::kInvalidArgument, "truncated uint at offset 2");
  ExpectError(Bytes({0x81, 0x01}), StatusCode::kInvalidArgument, "map at offset 0 declares 1 entries");
}

TEST(MsgpackDecodeTest, RejectsOversizedLengthsBeforeAllocating) {
  // A str32 / bin32 / array32 / map32 claiming 4 GiB in a handful of bytes.
  ExpectError(Bytes({0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}), StatusCode::kInvalidArgument, "truncated str");
  ExpectError(Bytes({0xc6, 0xff, 0xff, 0xff, 0xff}), StatusCode::kInvalidArgument, "truncated bin");
  ExpectError(Bytes({0xdd, 0x00, 0x0f, 0xff, 0xff, 0x01}), StatusCode::kInvalidArgument, "only 1 bytes remain");
  ExpectError(Bytes({0xdd, 0xff, 0xff, 0xff, 0xff}), StatusCode::kPayloadTooLarge, "over the limit");
  ExpectError(Bytes({0xdf, 0x00, 0x00, 0x10, 0x00, 0x01}), StatusCode::kInvalidArgument, "declares 4096 entries");
}

TEST(MsgpackDecodeTest, EnforcesLimits) {
  MsgpackLimits limits;
  limits.max_container_len = 2;
  ExpectError(Bytes({0x93, 1, 2, 3}), StatusCode::kPayloadTooLarge, "has 3 entries", limits);
  limits = {};
  limits.max_total_values = 4;
  ExpectError(Bytes({0x92, 0x92, 1, 2, 0x91, 3}), StatusCode::kPayloadTooLarge, "more than 4 values", limits);
  EXPECT_TRUE(DecodeMsgpack(Bytes({0x92, 0x91, 1, 2}), limits).ok());
  limits = {};
  limits.max_input_bytes = 3;
  ExpectError(Bytes({0x93, 1, 2, 3}), StatusCode::kPayloadTooLarge, "input of 4 bytes", limits);
}

TEST(MsgpackDecodeTest, RejectsDepthBomb) {
  std::string ok_depth(32, static_cast<char>(0x91));
  ok_depth.push_back(0x00);
  EXPECT_TRUE(DecodeMsgpack(ok_depth).ok());
  std::string too_deep(33, static_cast<char>(0x91));
  too_deep.push_back(0x00);
  ExpectError(too_deep, StatusCode::kInvalidArgument, "nests deeper than 32 levels");
  // A million nested maps must fail fast, not overflow the stack.
  std::string bomb(1 << 20, static_cast<char>(0x81));
  ExpectError(bomb, StatusCode::kInvalidArgument, "nests deeper");
}

TEST(MsgpackDecodeTest, RejectsReservedExtAndTrailingBytes) {
  ExpectError(Bytes({0xc1}), StatusCode::kInvalidArgument, "reserved byte 0xc1");
  ExpectError(Bytes({0xd4, 0x01, 0x02}), StatusCode::kInvalidArgument, "extension type (byte 0xd4)");
  ExpectError(Bytes({0xc7, 0x01, 0x05, 0x00}), StatusCode::kInvalidArgument, "extension type (byte 0xc7)");
  // The timestamp extension (fixext 4, type -1) is an extension too.
  ExpectError(Bytes({0xd6, 0xff, 0, 0, 0, 0}), StatusCode::kInvalidArgument, "extension type");
  ExpectError(Bytes({0x01, 0x02}), StatusCode::kInvalidArgument, "1 trailing bytes after the value at offset 1");
}

}  // namespace
}  // namespace omni
