#include "tensor/dtype.h"

#include <cmath>

namespace omni {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kU8: return "U8";
  }
  return "?";
}

bool ParseDTypeName(std::string_view name, DType* out) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kI64, DType::kU8}) {
    if (name == DTypeName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16;
}

// IEEE 754 binary16 <-> binary32, written out bit by bit so it does not
// depend on F16C being present.
float F16ToF32(f16_t v) {
  uint32_t sign = (v.bits & 0x8000u) << 16;
  uint32_t exp = (v.bits >> 10) & 0x1f;
  uint32_t mant = v.bits & 0x3ff;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      u = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

f16_t F32ToF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return f16_t{static_cast<uint16_t>(sign | 0x7e00)};  // NaN
  if (abs >= 0x477ff000u) return f16_t{static_cast<uint16_t>(sign | 0x7c00)};  // overflow -> inf
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return f16_t{sign};
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t half = 1u << (shift - 1);
    uint32_t rounded = (mant + half - 1 + ((mant >> shift) & 1u)) >> shift;
    return f16_t{static_cast<uint16_t>(sign | rounded)};
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even
  uint32_t h = ((rounded >> 13) - ((127 - 15) << 10));
  return f16_t{static_cast<uint16_t>(sign | h)};
}

}  // namespace omni
