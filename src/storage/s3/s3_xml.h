// The little XML S3 speaks: ListObjectsV2 results, multipart upload ids and
// <Error> bodies. S3's responses are flat, machine-written and free of
// comments, CDATA and namespaces prefixes we care about, so a tag scanner is
// enough; a full XML parser would be a dependency for nothing. Pure code.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace omni {

// Replaces &amp; &lt; &gt; &quot; &apos; and numeric references (&#65; &#x41;).
// Unknown or malformed references are kept as they are.
std::string XmlDecode(std::string_view text);
// Escapes & < > " ' for element text.
std::string XmlEscape(std::string_view text);

// The raw inner text of every <tag>...</tag> (or <tag/>, as "") directly or
// deeply inside `xml`, in document order. Elements of the same name must not
// nest (true of everything S3 sends that we read).
std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag);
// The decoded text of the first <tag>, or nullopt.
std::optional<std::string> XmlText(std::string_view xml, std::string_view tag);

// "2009-10-12T17:50:30.000Z" (ListObjects' LastModified).
std::optional<Clock::WallTime> ParseIso8601(std::string_view s);
// "Wed, 12 Oct 2009 17:50:00 GMT" (the Last-Modified header, RFC 9110 IMF-fixdate).
std::optional<Clock::WallTime> ParseHttpDate(std::string_view s);

// Maps an S3 error response to a Status: NoSuchKey/NoSuchBucket/404 ->
// NotFound; AccessDenied/SignatureDoesNotMatch/InvalidAccessKeyId/
// RequestTimeTooSkewed/403 -> PermissionDenied; PreconditionFailed/412 ->
// FailedPrecondition; SlowDown/InternalError/ServiceUnavailable/5xx ->
// Unavailable; RequestTimeout -> DeadlineExceeded; InvalidRange/416 and
// other 4xx -> InvalidArgument (409 -> AlreadyExists). The S3 code becomes the
// Status error_code; `what` ("GET bucket/key") prefixes the message.
Status S3ErrorToStatus(int http_status, std::string_view body, std::string_view what);

}  // namespace omni
