// Sha256Digest: a SHA-256 digest as 32 raw bytes, the key of an injected
// medium in the prefix cache and in KV events. Apart from media_span.h so the
// KV-event types need no tensor headers.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/ascii.h"

namespace omni {

using Sha256Digest = std::array<uint8_t, 32>;

// 64 lower-case hex digits, the form object metadata and KV events carry.
inline std::string Sha256DigestHex(const Sha256Digest& d) { return HexLower(d.data(), d.size()); }

}  // namespace omni
