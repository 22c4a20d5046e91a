// Base64 (RFC 4648 section 4, the standard alphabet with '=' padding), for
// data: URLs and OpenAI's inline media.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace omni {

std::string Base64Encode(std::string_view bytes);

// Decodes strictly: the standard alphabet only, padding where the length
// needs it (unpadded input is accepted when its length is otherwise valid),
// no bits set past the end. Whitespace is not allowed (data: URLs and JSON
// strings carry none). nullopt on anything else.
std::optional<std::string> Base64Decode(std::string_view text);

// The URL-safe alphabet (RFC 4648 section 5: '-' and '_' for '+' and '/'),
// padding optional, otherwise as strict as Base64Decode.
std::optional<std::string> Base64UrlDecode(std::string_view text);

// The decoded length of valid input of this length, at most; lets callers
// refuse oversize input before decoding it.
inline size_t Base64DecodedSizeBound(size_t text_size) { return (text_size + 3) / 4 * 3; }

}  // namespace omni
