// AWS Signature Version 4 for S3, as pure functions of the request, the
// credentials and an injected time. No I/O, no clock reads: the caller passes
// `now`, so tests can compare every intermediate string with vectors from the
// AWS SDK (tests/data/sigv4/) and with AWS's published examples.
//
// Follows "Signature Calculations for the Authorization Header" and "Query
// String Authentication" of the S3 API reference:
//   canonical request = METHOD \n URI \n QUERY \n HEADERS \n\n SIGNED \n PAYLOAD
//   string to sign    = AWS4-HMAC-SHA256 \n DATE \n SCOPE \n hex(sha256(CR))
//   signing key       = HMAC chain "AWS4"+secret -> date -> region -> s3 -> aws4_request
// S3 differs from other services in one way that matters here: the path is
// URI-encoded once per segment (not twice), and "." / ".." are not collapsed.
//
// Thread-safe: everything here is a pure function.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/content_hash.h"

namespace omni {

// Never logged, never part of a URI. `session_token` is empty unless the
// credentials are temporary (STS).
struct S3Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
};

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
// sha256("") in hex, the payload hash of every request without a body.
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// The longest lifetime SigV4 allows for a presigned URL (7 days).
inline constexpr std::chrono::seconds kMaxPresignTtl{604800};

using QueryParams = std::vector<std::pair<std::string, std::string>>;  // decoded name, value
using SignedHeaderList = std::vector<std::pair<std::string, std::string>>;

// One request to sign. `path` and `query` are decoded (raw key bytes); the
// signer encodes them, and the caller must put the same encoding on the wire
// (UriEncodePath / CanonicalQueryString below).
struct SigV4Request {
  std::string method;   // "GET", "PUT", ...
  std::string host;     // the Host header value: "bucket.s3.amazonaws.com" or "127.0.0.1:9000"
  std::string path;     // "/bucket/some key.bin", decoded
  QueryParams query;    // decoded; a name with an empty value is signed as "name="
  // Headers to sign besides host, x-amz-date, x-amz-content-sha256 and
  // x-amz-security-token (which the signer adds): range, content-type,
  // x-amz-meta-*, ... Names in any case.
  SignedHeaderList headers;
  // Hex sha256 of the body, or kUnsignedPayload.
  std::string payload_sha256 = std::string(kEmptyPayloadSha256);
};

struct SigV4Scope {
  std::string region = "us-east-1";
  std::string service = "s3";
};

// The result of signing, with the intermediate strings kept for tests and
// for debugging a SignatureDoesNotMatch (S3 returns its own StringToSign).
struct SigV4Signed {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // 64 hex digits
  std::string signed_headers;  // "host;range;x-amz-content-sha256;x-amz-date"
  std::string amz_date;        // "20130524T000000Z"
  std::string authorization;   // the Authorization header value
  // What the caller must send: x-amz-date, x-amz-content-sha256,
  // x-amz-security-token (if any) and authorization, lower-case names.
  SignedHeaderList headers_to_send;
};

struct SigV4Presigned {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;
  // The query string to append after '?', every X-Amz-* parameter included,
  // sorted by encoded name (the order the AWS SDK writes).
  std::string query;
};

// S3's UriEncode: unreserved bytes (A-Za-z0-9 -._~) stay, every other byte
// becomes %XX (upper-case hex); with `keep_slash`, '/' stays too.
std::string UriEncode(std::string_view s, bool keep_slash);
// The canonical URI of a decoded path: each segment encoded once, '/' kept.
inline std::string UriEncodePath(std::string_view path) { return UriEncode(path, /*keep_slash=*/true); }
// "a=1&b=&c=x%20y": encoded names and values, sorted by encoded name then
// value, '=' always present. Also the query string to put on the wire.
std::string CanonicalQueryString(const QueryParams& query);
// "20130524T000000Z" (UTC, second precision).
std::string FormatAmzDate(std::chrono::system_clock::time_point t);

// Sha256Hex (hex sha256 of bytes) comes from storage/content_hash.h.
// HmacSha256 (raw 32-byte HMAC-SHA256) comes from storage/content_hash.h too.
std::string HexEncode(std::string_view bytes);
// The raw 32-byte signing key for `date` ("20130524").
std::string SigV4SigningKey(std::string_view secret, std::string_view date, const SigV4Scope& scope);

// Signs with an Authorization header. The returned headers_to_send go onto
// the request as they are; every header in `request.headers` must be sent
// with exactly the value given.
SigV4Signed SignRequest(const SigV4Request& request, const S3Credentials& creds, const SigV4Scope& scope,
                        std::chrono::system_clock::time_point now);

// A presigned URL's query for `request` (method, host, path and any extra
// query such as partNumber/uploadId). Only `host` is signed and the payload is
// UNSIGNED-PAYLOAD, so plain curl can use the URL; request.headers and
// request.payload_sha256 are ignored. The caller checks 1 s <= ttl <= 7 days.
SigV4Presigned PresignRequest(const SigV4Request& request, const S3Credentials& creds, const SigV4Scope& scope,
                              std::chrono::system_clock::time_point now, std::chrono::seconds ttl);

}  // namespace omni
