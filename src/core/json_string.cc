#include "core/json_string.h"

#include <cstdint>

#include "core/ascii.h"
#include "core/utf8.h"

namespace omni {

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    uint8_t c = static_cast<uint8_t>(ch);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          *out += "\\u00";
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

namespace {

// Four hex digits at text[pos]; false if there are not four.
bool ReadHex4(std::string_view text, size_t pos, uint32_t* out) {
  if (text.size() < pos + 4) return false;
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) {
    int d = HexDigitValue(text[pos + i]);
    if (d < 0) return false;
    v = v * 16 + static_cast<uint32_t>(d);
  }
  *out = v;
  return true;
}

}  // namespace

std::optional<JsonEscapeError> DecodeJsonEscape(std::string_view text, size_t* pos, std::string* out) {
  const size_t at = *pos;
  using Kind = JsonEscapeError::Kind;
  auto fail = [pos](Kind kind, size_t where) {
    *pos = where;
    return JsonEscapeError{kind, where};
  };
  if (at + 1 >= text.size()) return fail(Kind::kUnterminated, at + 1);
  const char c = text[at + 1];
  *pos = at + 2;
  switch (c) {
    case '"': out->push_back('"'); return std::nullopt;
    case '\\': out->push_back('\\'); return std::nullopt;
    case '/': out->push_back('/'); return std::nullopt;
    case 'b': out->push_back('\b'); return std::nullopt;
    case 'f': out->push_back('\f'); return std::nullopt;
    case 'n': out->push_back('\n'); return std::nullopt;
    case 'r': out->push_back('\r'); return std::nullopt;
    case 't': out->push_back('\t'); return std::nullopt;
    case 'u': break;
    default: return fail(Kind::kInvalidEscape, at);
  }
  uint32_t cp = 0;
  if (!ReadHex4(text, at + 2, &cp)) return fail(Kind::kInvalidUnicode, at);
  *pos = at + 6;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(Kind::kLoneLowSurrogate, at);
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    const size_t second = at + 6;
    uint32_t low = 0;
    if (text.substr(second, 2) != "\\u") return fail(Kind::kLoneHighSurrogate, at);
    if (!ReadHex4(text, second + 2, &low)) return fail(Kind::kInvalidUnicode, second);
    if (low < 0xDC00 || low > 0xDFFF) return fail(Kind::kLoneHighSurrogate, at);
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    *pos = second + 6;
  }
  AppendCodePoint(cp, out);
  return std::nullopt;
}

}  // namespace omni
