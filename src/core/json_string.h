// JSON string literals written and read by hand (log lines, safetensors
// headers, chat-template JSON, the gateway's body peek). Written as serde_json
// and Python's json.dumps with ensure_ascii=False escape: `"`, `\`, the short
// forms \b \f \n \r \t, other control characters as \u00XX, everything else
// (UTF-8 included) verbatim. Read per RFC 8259 section 7.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace omni {

// Appends `s` quoted and escaped to `out`.
void AppendJsonString(std::string_view s, std::string* out);

// What is wrong with an escape, and where: the offset of its backslash (of
// the second one for a bad low half of a pair; the end for kUnterminated).
// Callers word the message for their users.
struct JsonEscapeError {
  enum class Kind { kUnterminated, kInvalidEscape, kInvalidUnicode, kLoneHighSurrogate, kLoneLowSurrogate };
  Kind kind;
  size_t at = 0;
};

// Decodes the escape whose backslash is text[*pos]: appends its UTF-8 to
// *out (a \uD8xx\uDCxx surrogate pair as one code point) and moves *pos past
// it. On error, *pos is the error's `at` and *out may hold part of nothing.
std::optional<JsonEscapeError> DecodeJsonEscape(std::string_view text, size_t* pos, std::string* out);

}  // namespace omni
