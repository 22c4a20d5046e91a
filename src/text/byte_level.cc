#include "text/byte_level.h"

#include <array>

#include "core/utf8.h"

namespace omni {
namespace {

bool MapsToItself(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// 68 bytes are remapped, so the alphabet ends below U+0144.
constexpr uint32_t kAlphabetEnd = 0x100 + 68;

struct Tables {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<int16_t, kAlphabetEnd> cp_to_byte{};
  Tables() {
    cp_to_byte.fill(-1);
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      byte_to_cp[b] = MapsToItself(b) ? b : next++;
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

uint32_t ByteToCodePoint(uint8_t b) { return GetTables().byte_to_cp[b]; }

std::optional<uint8_t> CodePointToByte(uint32_t cp) {
  if (cp >= kAlphabetEnd) return std::nullopt;
  int16_t b = GetTables().cp_to_byte[cp];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::string BytesToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendCodePoint(ByteToCodePoint(static_cast<uint8_t>(c)), &out);
  return out;
}

std::string ByteLevelToBytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  if (!IsValidUtf8(token)) return std::string(token);
  size_t pos = 0;
  while (pos < token.size()) {
    std::optional<uint8_t> b = CodePointToByte(NextCodePoint(token, &pos));
    if (!b) return std::string(token);
    out.push_back(static_cast<char>(*b));
  }
  return out;
}

}  // namespace omni
