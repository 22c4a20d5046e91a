// UTF-8 helpers (the text layer, model files, JSON edges): validation, lossy decoding that can stop
// before an incomplete trailing character (for streaming), and code points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace omni {

// True if `s` is well-formed UTF-8 (no overlongs, surrogates or values past
// U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Appends `bytes` to `out` as valid UTF-8, replacing each maximal ill-formed
// subpart with U+FFFD (the WHATWG / Rust from_utf8_lossy rule, which Hugging
// Face decoders use). When `final` is false, a trailing sequence that could
// still become a valid character is not consumed. Returns the number of bytes
// consumed; the rest must be kept and passed again with more bytes.
size_t AppendUtf8Lossy(std::string_view bytes, bool final, std::string* out);

// Appends the UTF-8 encoding of `cp` (which must be a valid scalar value).
void AppendCodePoint(uint32_t cp, std::string* out);

// Decodes the character starting at s[*pos] (s must be valid UTF-8) and
// advances *pos past it.
uint32_t NextCodePoint(std::string_view s, size_t* pos);

}  // namespace omni
