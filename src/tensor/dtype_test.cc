#include "tensor/dtype.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

TEST(DTypeTest, NamesRoundTrip) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kI64, DType::kU8}) {
    DType back;
    ASSERT_TRUE(ParseDTypeName(DTypeName(d), &back));
    EXPECT_EQ(back, d);
  }
  DType x;
  EXPECT_FALSE(ParseDTypeName("F8_E4M3", &x));
}

// Reference bit patterns from the IEEE formats (computed by hand / numpy).
TEST(DTypeTest, Bf16Conversions) {
  EXPECT_EQ(F32ToBF16(1.0f).bits, 0x3f80);
  EXPECT_EQ(F32ToBF16(-2.0f).bits, 0xc000);
  EXPECT_EQ(F32ToBF16(3.14159265f).bits, 0x4049);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even -> 1.0.
  EXPECT_EQ(F32ToBF16(1.00390625f).bits, 0x3f80);
  EXPECT_EQ(F32ToBF16(1.01171875f).bits, 0x3f82);  // tie, rounds up to even
  EXPECT_FLOAT_EQ(BF16ToF32(bf16_t{0x4049}), 3.140625f);
}

TEST(DTypeTest, F16Conversions) {
  EXPECT_EQ(F32ToF16(1.0f).bits, 0x3c00);
  EXPECT_EQ(F32ToF16(-2.0f).bits, 0xc000);
  EXPECT_EQ(F32ToF16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(F32ToF16(1e6f).bits, 0x7c00);           // overflow to inf
  EXPECT_EQ(F32ToF16(5.9604645e-08f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16(6.1035156e-05f).bits, 0x0400);  // smallest normal
  EXPECT_FLOAT_EQ(F16ToF32(f16_t{0x3555}), 0.33325195f);
  EXPECT_FLOAT_EQ(F16ToF32(f16_t{0x0001}), 5.9604645e-08f);
  for (int b = 0; b < 0x7c00; b += 7) {  // every finite positive value round-trips
    f16_t h{static_cast<uint16_t>(b)};
    EXPECT_EQ(F32ToF16(F16ToF32(h)).bits, h.bits) << b;
  }
}

}  // namespace
}  // namespace omni
