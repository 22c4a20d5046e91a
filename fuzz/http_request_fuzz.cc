// libFuzzer target for the server's request reading (net/internal/framing.h):
// the raw-head checks, Beast's parser and the RFC 9112 framing rules, in the
// order the server applies them.
//
// For any input: a Status, never a crash. For an accepted request: it took
// no more than the input; any Transfer-Encoding is exactly "chunked" with no
// Content-Length beside it (anything else must have been refused, or the
// bytes after it could run as a smuggled request); the body is within the
// limit; and the same bytes cut at the end of the request parse to the same
// request (the framing depends on the request's own bytes alone).
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "net/http.h"
#include "net/internal/framing.h"

namespace {
constexpr size_t kMaxHeader = 8 * 1024;
constexpr size_t kMaxBody = 64 * 1024;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  using namespace omni::net_internal;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseRequestBytes(bytes, kMaxHeader, kMaxBody);
  if (!parsed.ok()) {
    OMNI_CHECK(!parsed.status().message().empty());
    return 0;
  }
  OMNI_CHECK_LE(parsed->consumed, size);
  OMNI_CHECK_LE(parsed->message.body().size(), kMaxBody);
  const auto& m = parsed->message;
  int codings = 0;
  for (const auto& field : m) {
    if (field.name() != http::field::transfer_encoding) continue;
    ++codings;
    OMNI_CHECK(EqualsIgnoreCase(field.value(), "chunked"));
    OMNI_CHECK(m.find(http::field::content_length) == m.end());
  }
  OMNI_CHECK_LE(codings, 1);
  auto again = ParseRequestBytes(bytes.substr(0, parsed->consumed), kMaxHeader, kMaxBody);
  OMNI_CHECK(again.ok()) << again.status().ToString();
  OMNI_CHECK_EQ(again->consumed, parsed->consumed);
  OMNI_CHECK(again->message.body() == m.body());
  OMNI_CHECK(again->message.target() == m.target());
  return 0;
}
