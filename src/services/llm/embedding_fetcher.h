// Fetches the embedding objects that chat media parts reference, with a
// byte-bounded LRU cache in front.
//
// URLs: s3://BUCKET/KEY (read through the --store ObjectStore, which must be
// that bucket), file:///PATH (only under the --store file:// root, so a client
// cannot make the server read arbitrary files), http://... (presigned URLs,
// fetched with FetchUrl). Objects are content-addressed and immutable
// (emb/<model>/<sha256>.safetensors), so the cache key is the object's
// location without the URL query (a presigned URL's signature changes; the
// object does not). The injected rows are keyed in the prefix cache by the
// sha256 of the object's bytes, never by URL.
//
// Errors: NotFound (404) for a missing object, InvalidArgument (400) for a
// corrupt one, a URL the server cannot read, or a store mismatch; store and
// network failures keep their codes. `param` is set by the caller.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/status.h"
#include "engine/media_span.h"
#include "modelfile/tensor_object.h"
#include "net/http_client.h"
#include "storage/object_store.h"

namespace omni::llm {

struct FetchedEmbedding {
  EmbeddingObject object;  // tensors view `bytes` kept alive by the object
  Sha256Digest sha256{};   // of the object's bytes
  size_t nbytes = 0;
};

class EmbeddingFetcher {
 public:
  // `store` (may be null) is the --store; `store_uri` its URI. `client` may
  // be null (no http URLs then).
  EmbeddingFetcher(ObjectStore* store, std::string store_uri, HttpClient* client, size_t cache_bytes);

  StatusOr<std::shared_ptr<const FetchedEmbedding>> Fetch(std::string_view url);

  size_t cached_bytes() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  // The object's bytes for `url`; *cache_key is where it lives.
  StatusOr<std::string> ReadBytes(std::string_view url, std::string* cache_key);
  void Insert(const std::string& key, std::shared_ptr<const FetchedEmbedding> value);

  ObjectStore* store_;
  std::string store_uri_;
  HttpClient* client_;
  size_t capacity_;

  mutable std::mutex mu_;
  using Entry = std::pair<std::string, std::shared_ptr<const FetchedEmbedding>>;
  std::list<Entry> lru_;  // most recent first; guarded by mu_
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;  // guarded by mu_
  size_t bytes_ = 0;     // guarded by mu_
  uint64_t hits_ = 0;    // guarded by mu_
  uint64_t misses_ = 0;  // guarded by mu_
};

// 64 hex digits -> 32 bytes; false if malformed.
bool Sha256FromHex(std::string_view hex, Sha256Digest* out);

}  // namespace omni::llm
