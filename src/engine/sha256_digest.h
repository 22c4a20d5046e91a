// Sha256Digest: a SHA-256 digest as 32 raw bytes, the key of an injected
// medium in the prefix cache and in KV events. Apart from media_span.h so the
// KV-event types need no tensor headers.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace omni {

using Sha256Digest = std::array<uint8_t, 32>;

// 64 lower-case hex digits, the form object metadata and KV events carry.
inline std::string Sha256DigestHex(const Sha256Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (size_t i = 0; i < d.size(); ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 15];
  }
  return out;
}

}  // namespace omni
