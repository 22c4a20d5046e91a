// Reads the top-level "model" of a JSON request body without building a DOM,
// for body-based routing (spec/routing.md): bodies may carry tens of MB of
// base64 media, and the gateway only needs one short string from them.
//
// The scanner walks the top-level object key by key. Keys are compared after
// unescaping ("mod\u0065l" is "model"); the values of other keys are skipped:
// strings by searching for their closing quote (their escapes and characters
// are not checked: the bulk of a body is there, and the server's parser
// checks it), numbers, literals, arrays and objects (nesting up to
// kMaxPeekDepth) by their grammar. The "model" value is unescaped fully
// (\uXXXX with surrogate pairs) and must be valid UTF-8.
//
// The scan stops at the first top-level "model" key, so the rest of the body
// is not validated and a body with two "model" keys resolves to the first
// (nlohmann, which the LLM server uses, keeps the last); a body that is not
// JSON after that point is the server's to reject.
//
// Errors are InvalidArgument, with param "model" where it is about the field:
//   "request body is not a JSON object"
//   "`model` must be a string"
//   "missing `model`"
//   "malformed JSON at byte N: <what>"   (N: 0-based offset of the bad byte)
// Pure and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace omni {

inline constexpr int kMaxPeekDepth = 256;

StatusOr<std::string> PeekJsonModel(std::string_view body);

// The raw JSON text of the top-level member `key` (e.g. the "messages" array
// as sent, for the approximate prefix scorer), found the same way; nullopt
// when the object has no such key. The value's grammar is checked as
// PeekJsonModel checks skipped values.
StatusOr<std::optional<std::string_view>> PeekJsonRawMember(std::string_view body, std::string_view key);

}  // namespace omni
