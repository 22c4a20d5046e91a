// WholeInt64: a double that is a whole number inside int64's range, as that
// int64. JSON writers (and JavaScript clients) send 4096.0 for 4096; a bare
// static_cast of an out-of-range double is undefined behaviour, and
// static_cast<double>(INT64_MAX) rounds up to 2^63, which is out of range.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

namespace omni {

inline std::optional<int64_t> WholeInt64(double d) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!(d >= -kTwoTo63 && d < kTwoTo63) || d != std::floor(d)) return std::nullopt;  // NaN fails too
  return static_cast<int64_t>(d);
}

}  // namespace omni
