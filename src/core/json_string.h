// JSON string literals written by hand (log lines, safetensors headers,
// chat-template JSON), escaped as serde_json and Python's json.dumps with
// ensure_ascii=False escape: `"`, `\`, the short forms \b \f \n \r \t, other
// control characters as \u00XX, everything else (UTF-8 included) verbatim.
#pragma once

#include <string>
#include <string_view>

namespace omni {

// Appends `s` quoted and escaped to `out`.
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace omni
