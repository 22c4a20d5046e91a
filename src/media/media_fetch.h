// Reading the bytes a request's media URL names, whatever its scheme:
//   data:...;base64,...        inline (OpenAI's image_url, OmniServe's media_base64)
//   http://host/path           through the outbound-fetch policy (storage/fetch_policy.h):
//                              private and loopback addresses refused unless allowed,
//                              every redirect re-checked, a size limit and a deadline
//   file:///abs/path           only with a configured root, confined beneath it
//                              (storage/path_confine.h); refused otherwise
//   s3://bucket/key            through the injected S3 reader (the service's store
//                              credentials); the key is taken as written, spaces and
//                              all, as the AWS CLI takes it
// The bytes are then sniffed (media_kind.h) and hashed (SHA-256, the content
// address every cache key uses). https:// answers Unimplemented until the
// HTTP client speaks TLS.
//
//   MediaFetcher fetcher(options, &http_client);
//   StatusOr<FetchedMedia> media = fetcher.Fetch(url);
//
// Errors keep the shapes of url_fetch.h (InvalidArgument for a refused or
// malformed URL, PayloadTooLarge over max_bytes, NotFound, PermissionDenied,
// Unavailable, DeadlineExceeded), with the URL's query never shown.
// Thread-safety: Fetch is const and thread-safe if the HttpClient and the S3
// reader are.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "media/media_kind.h"
#include "net/http_client.h"
#include "storage/object_store.h"
#include "storage/url_fetch.h"

namespace omni::media {

// Reads s3://bucket/key (at most max_bytes; PayloadTooLarge beyond).
using S3Reader = std::function<StatusOr<std::string>(std::string_view bucket, std::string_view key, size_t max_bytes)>;

// Reads s3://BUCKET/KEY URLs of the store at `store_uri` (its own bucket,
// the key under its prefix) through `store` and its credentials; other
// buckets are refused. Empty (s3:// refused) unless the store is an s3://
// one. `store` must outlive the reader.
S3Reader S3ReaderForStore(ObjectStore* store, std::string store_uri);

struct MediaFetchOptions {
  size_t max_bytes = 64u << 20;
  std::chrono::milliseconds timeout{30'000};  // http: all hops together
  FetchPolicy policy;                         // http: which addresses may be reached
  std::string file_root;                      // file://: empty refuses every file URL
  S3Reader read_s3;                           // s3://: empty refuses every s3 URL
};

struct FetchedMedia {
  std::string bytes;
  MediaKind kind = MediaKind::kUnknown;  // sniffed from the bytes
  std::string sha256;                    // hex digest of the bytes
  std::string claimed_type;              // a data: URL's media type, for messages only
};

class MediaFetcher {
 public:
  MediaFetcher(MediaFetchOptions options, HttpClient* http) : options_(std::move(options)), http_(http) {}

  StatusOr<FetchedMedia> Fetch(std::string_view url) const;

 private:
  StatusOr<std::string> ReadBytes(std::string_view url, std::string* claimed_type) const;

  MediaFetchOptions options_;
  HttpClient* http_;  // may be null: http URLs are then refused
};

}  // namespace omni::media
