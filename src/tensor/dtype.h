// Element types and the scalar conversions between them.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace omni {

enum class DType : uint8_t { kF32, kBF16, kF16, kI32, kI64, kU8 };

size_t DTypeSize(DType dtype);
// The safetensors spelling: "F32", "BF16", "F16", "I32", "I64", "U8".
std::string_view DTypeName(DType dtype);
// Parses the safetensors spelling; false if unknown.
bool ParseDTypeName(std::string_view name, DType* out);
bool IsFloating(DType dtype);

template <typename T>
constexpr DType DTypeOf();

// Distinct 16-bit storage types so bf16 and f16 buffers cannot be mixed up.
struct bf16_t {
  uint16_t bits;
};
struct f16_t {
  uint16_t bits;
};

template <> constexpr DType DTypeOf<float>() { return DType::kF32; }
template <> constexpr DType DTypeOf<bf16_t>() { return DType::kBF16; }
template <> constexpr DType DTypeOf<f16_t>() { return DType::kF16; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kI32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kI64; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kU8; }

inline float BF16ToF32(bf16_t v) {
  uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, NaN stays NaN (as PyTorch and oneDNN do).
inline bf16_t F32ToBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{static_cast<uint16_t>((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{static_cast<uint16_t>(u >> 16)};
}

float F16ToF32(f16_t v);
f16_t F32ToF16(float f);

}  // namespace omni
