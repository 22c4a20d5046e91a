// ASCII helpers shared by the parsers of untrusted text (URLs, JSON, XML,
// hex digests). Locale-independent, unlike <cctype>.
#pragma once

namespace omni {

// 0..15 for [0-9a-fA-F], -1 otherwise.
inline int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace omni
