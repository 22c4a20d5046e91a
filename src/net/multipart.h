// multipart/form-data request bodies (RFC 7578 over RFC 2046 section 5.1
// framing), as sent to POST /v1/images/edits. Pure code over untrusted
// bytes, no sockets.
//
// What is accepted, and why where it is not obvious:
// - Lines end in CRLF only. Every client that sends form bodies (browsers,
//   curl, Python requests/httpx, the OpenAI SDKs) uses CRLF, as RFC 2046
//   requires; a bare LF is part data or, in a header block, an error. Taking
//   both would let two parsers disagree on where a part ends.
// - The preamble (before the first delimiter) and the epilogue (after the
//   close delimiter) are ignored. Whitespace after a delimiter
//   (RFC 2046 "transport-padding") is allowed.
// - A line that begins with the delimiter but goes on with anything other
//   than "--", padding or CRLF is an error, not part data: RFC 2046 forbids
//   the delimiter as the prefix of any line inside a part.
// - Each part needs exactly one `Content-Disposition: form-data` with a
//   non-empty `name`; `filename` is optional. Parameter values are tokens or
//   quoted strings whose backslash escapes are decoded (RFC 9110 section
//   5.6.4). Percent-encoding (as WHATWG browsers use for '"' in names) and
//   RFC 5987 `filename*` are kept as sent / ignored: RFC 7578 section 4.2
//   says senders must not use `filename*`.
// - Header names compare case-insensitively; headers other than
//   Content-Disposition, Content-Type and Content-Transfer-Encoding are
//   ignored. A Content-Transfer-Encoding other than 7bit, 8bit or binary
//   (deprecated by RFC 7578 section 4.7) is refused rather than misread.
//
// Every failure is InvalidArgument with a message that quotes client text
// at most 64 bytes at a time, non-printable bytes escaped as \xNN.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace omni {

struct MultipartPart {
  std::string name;          // Content-Disposition `name`, never empty
  std::string filename;      // Content-Disposition `filename`; empty if none
  std::string content_type;  // the part's Content-Type, OWS trimmed, empty if
                             // none (RFC 7578 section 4.4 default: text/plain)
  std::string data;          // the part's bytes, exactly as sent

  // True when the part carries a non-empty filename. A browser's empty file
  // input sends `filename=""` and no bytes; that reads as not a file.
  bool is_file() const { return !filename.empty(); }
};

struct MultipartLimits {
  size_t max_parts = 32;
  // Per part: the bytes of its header lines, CRLFs and blank line included.
  size_t max_header_bytes = 8192;
};

// Splits `body` into its parts, in order. `content_type` is the request's
// Content-Type header value: multipart/form-data with a `boundary` parameter
// of 1..70 RFC 2046 bchars, quoted or not. Each part's data is copied out of
// `body` (the request body is not kept alive by the result). Runs in time
// linear in body.size() (times the boundary length at worst).
StatusOr<std::vector<MultipartPart>> ParseMultipartFormData(std::string_view content_type,
                                                            std::string_view body,
                                                            const MultipartLimits& limits = {});

// The first part named `name` (case-sensitive, as RFC 7578 names are), or
// nullptr.
const MultipartPart* FindPart(const std::vector<MultipartPart>& parts, std::string_view name);

}  // namespace omni
