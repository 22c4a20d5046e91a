// Fetching objects by URL, for services that hold no store credentials: the
// presigned http:// URLs of S3Store and the file:// URLs of FsStore.
//
//   auto bytes = FetchUrl(url, {.max_bytes = 64 << 20}, &http_client);
//
// Errors, as ObjectStore's: PermissionDenied (403: an expired or tampered
// presigned URL), NotFound (404, or no such file), PayloadTooLarge (over
// max_bytes), Unavailable (5xx, connection failures), DeadlineExceeded
// (timeout), InvalidArgument (a malformed URL), Unimplemented (https, which
// HttpClient does not speak yet). Messages never include a URL's query, which
// holds the signature of a presigned URL.
//
// Thread-safety: thread-safe if the HttpClient is (it is).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"
#include "net/http_client.h"

namespace omni {

struct FetchOptions {
  size_t max_bytes = 256u << 20;  // larger objects are refused, not truncated
  std::chrono::milliseconds timeout{30'000};  // http: the whole request
};

// The body of a GET of an http:// URL, or the bytes of the regular file a
// file:// URL names (percent-decoded; FIFOs, devices and directories are
// refused). `client` may be null for file:// URLs.
StatusOr<std::string> FetchUrl(std::string_view url, const FetchOptions& options, HttpClient* client);

struct PutUrlOptions {
  std::string content_type = "application/octet-stream";  // http only
  std::chrono::milliseconds timeout{30'000};
  bool sync = true;  // file: fsync the data and the directory
};

// PUTs `data` to a presigned http:// URL, or atomically replaces the file a
// file:// URL names (temporary + fsync + rename in its directory, which must
// exist; the replaced object's FsStore sidecar is removed, so Head then
// describes the new bytes without metadata).
Status PutToUrl(std::string_view url, std::string_view data, const PutUrlOptions& options, HttpClient* client);

}  // namespace omni
