// Fetches the embedding objects that chat media parts reference, with a
// byte-bounded LRU cache in front.
//
// URLs: s3://BUCKET/KEY (read through the --store ObjectStore, which must be
// that bucket), file:///PATH (confined to the --store file:// root by
// path_confine.h: no '..', no symbolic link, regular files only), http://...
// (presigned URLs, fetched with FetchUrl under the FetchPolicy: loopback,
// private and link-local addresses are refused unless allowed). Objects are
// content-addressed and immutable (emb/<model>/<sha256>.safetensors), so the
// cache key is the object's location without the URL query (a presigned
// URL's signature changes; the object does not). The injected rows are keyed
// in the prefix cache by the sha256 of the object's bytes, never by URL.
//
// Errors: NotFound (404) "embedding object not found: URL" for a missing
// object and, alike, for every file:// URL the confinement refuses, so a
// client cannot learn which files exist; InvalidArgument (400) for a corrupt
// object (the message never quotes its bytes; the parser's detail goes to
// the log), a URL the policy refuses, or a store mismatch; store and network
// failures keep their codes. `param` is set by the caller.
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/lru_cache.h"
#include "core/status.h"
#include "engine/media_span.h"
#include "modelfile/tensor_object.h"
#include "net/http_client.h"
#include "storage/fetch_policy.h"
#include "storage/object_store.h"

namespace omni::llm {

struct FetchedEmbedding {
  EmbeddingObject object;  // tensors view `bytes` kept alive by the object
  Sha256Digest sha256{};   // of the object's bytes
  size_t nbytes = 0;
};

struct EmbeddingFetcherOptions {
  ObjectStore* store = nullptr;  // the --store; may be null; must outlive the fetcher
  std::string store_uri;         // its URI
  HttpClient* http_client = nullptr;  // null: no http:// URLs; must outlive the fetcher
  size_t cache_bytes = 512u << 20;
  size_t max_object_bytes = 512u << 20;
  std::chrono::milliseconds fetch_timeout{30'000};  // http://, redirects included
  FetchPolicy fetch_policy;
};

class EmbeddingFetcher {
 public:
  explicit EmbeddingFetcher(EmbeddingFetcherOptions options);

  StatusOr<std::shared_ptr<const FetchedEmbedding>> Fetch(std::string_view url);

  size_t cached_bytes() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  // The object's bytes for `url`; *cache_key is where it lives.
  StatusOr<std::string> ReadBytes(std::string_view url, std::string* cache_key);

  EmbeddingFetcherOptions options_;
  // The store's directory with links resolved (as FsStore's root, which
  // its presigned URLs name); empty unless the store is file://.
  std::string file_root_;

  LruCache<std::shared_ptr<const FetchedEmbedding>> cache_;  // by location, bounded by cache_bytes
};

// 64 hex digits -> 32 bytes; false if malformed.
bool Sha256FromHex(std::string_view hex, Sha256Digest* out);

}  // namespace omni::llm
