// The GPT-2 byte-level alphabet: every byte maps to one printable Unicode
// character, so a byte-level BPE vocabulary is a set of ordinary strings.
// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves;
// the other 68 bytes map, in byte order, to U+0100, U+0101, ... (so ' ' is
// 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace omni {

// The code point byte `b` maps to.
uint32_t ByteToCodePoint(uint8_t b);
// The byte a code point stands for, or nullopt if it is not in the alphabet.
std::optional<uint8_t> CodePointToByte(uint32_t cp);

// Maps raw bytes to their byte-level string (UTF-8 of the mapped characters).
std::string BytesToByteLevel(std::string_view bytes);
// Maps a byte-level token string back to raw bytes, the way Hugging Face's
// ByteLevel decoder does per token: if every character is in the alphabet the
// mapped bytes, otherwise the token's own UTF-8 bytes unchanged.
std::string ByteLevelToBytes(std::string_view token);

}  // namespace omni
