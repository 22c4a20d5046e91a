// Fetching objects by URL, for services that hold no store credentials: the
// presigned http:// URLs of S3Store and the file:// URLs of FsStore.
//
//   auto bytes = FetchUrl(url, {.max_bytes = 64 << 20, .file_root = store_root}, &http_client);
//
// Every fetch goes through two checks first:
//  - file:// URLs are confined to `file_root` (path_confine.h: decoded once,
//    no '.'/'..'/empty segment, no symbolic link followed, regular files only);
//  - http:// URLs go through the FetchPolicy (fetch_policy.h): the host is
//    resolved, every address checked, the connection pinned to the checked
//    address; each redirect (at most policy.max_redirects) is checked again.
//
// Errors, as ObjectStore's: InvalidArgument "fetching URL is not allowed:
// ..." (refused by the policy or the confinement, or a malformed URL),
// PermissionDenied (401/403: an expired or tampered presigned URL), NotFound
// (404, or no such file), PayloadTooLarge (over max_bytes), Unavailable (no
// valid HTTP answer at all, 5xx), Unimplemented (https, which HttpClient does
// not speak yet). Messages have one shape, "could not fetch URL: the server
// answered HTTP 404", and never include response bytes (an S3 error's
// <Code> goes to the debug log only) nor a URL's query, which holds the
// signature of a presigned URL. A refused connection, a reset, a timeout and
// an answer that is not HTTP read the same, so a fetch cannot tell a closed
// port from an open one that speaks something else.
//
// Thread-safety: thread-safe if the HttpClient is (it is).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"
#include "net/http_client.h"
#include "storage/fetch_policy.h"

namespace omni {

struct FetchOptions {
  size_t max_bytes = 256u << 20;  // larger objects are refused, not truncated
  std::chrono::milliseconds timeout{30'000};  // http: every hop and redirect together
  // file:// URLs must name a regular file beneath this absolute directory.
  // "/" admits any absolute path, still without following symbolic links.
  std::string file_root = "/";
  FetchPolicy policy;  // http://: which addresses may be reached
};

// The body of a GET of an http:// URL, or the bytes of the regular file a
// file:// URL names. `client` may be null for file:// URLs.
StatusOr<std::string> FetchUrl(std::string_view url, const FetchOptions& options, HttpClient* client);

struct PutUrlOptions {
  std::string content_type = "application/octet-stream";  // http only
  std::chrono::milliseconds timeout{30'000};
  bool sync = true;  // file: fsync the data and the directory
  std::string file_root = "/";  // as FetchOptions::file_root
  FetchPolicy policy;           // as FetchOptions::policy; PUTs follow no redirect
};

// PUTs `data` to a presigned http:// URL, or atomically replaces the file a
// file:// URL names (temporary + fsync + rename in its directory, which must
// exist beneath file_root; the replaced object's FsStore sidecar is removed,
// so Head then describes the new bytes without metadata).
Status PutToUrl(std::string_view url, std::string_view data, const PutUrlOptions& options, HttpClient* client);

}  // namespace omni
