// ASCII helpers shared by the parsers of untrusted text (URLs, JSON, XML,
// hex digests). Locale-independent, unlike <cctype>.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace omni {

// 0..15 for [0-9a-fA-F], -1 otherwise.
inline int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Lower-case hex of `len` bytes (digests, identifiers).
inline std::string HexLower(const void* data, size_t len) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string hex(2 * len, '\0');
  for (size_t i = 0; i < len; ++i) {
    hex[2 * i] = kHex[bytes[i] >> 4];
    hex[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return hex;
}
inline std::string HexLower(std::string_view bytes) { return HexLower(bytes.data(), bytes.size()); }

inline char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace omni
