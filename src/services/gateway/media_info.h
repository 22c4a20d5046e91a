// What the precise prefix scorer needs to know of a chat media part's
// embedding object to lay the prompt out as the LLM server will and key its
// blocks as the server does (prompt_tokens.h), read from the object's store
// metadata with a HEAD instead of fetching the object (the vision encoder
// writes rows, ids, mime, filename and object-sha256 there; docs/ENCODER.md).
//
// Objects are content-addressed and immutable, so answers are cached by URI
// (a bounded LRU); failures are not cached (the object may be written a
// moment later). A HEAD that fails, or metadata that lack what is needed, is
// an error for the caller to stop scoring at, never a request error.
//
// Thread-safety: thread-safe; the HEAD runs outside the lock (two requests
// for a new URI may both HEAD it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/lru_cache.h"
#include "core/status.h"
#include "net/metrics.h"
#include "storage/object_store.h"

namespace omni::gateway {

struct MediaObjectInfo {
  int64_t rows = 0;  // continuous rows ([rows, hidden]); 0: none
  int64_t ids = 0;   // discrete ids; 0: none
  std::string mime;      // the mime line's type; empty: the template's default
  std::string filename;  // the mime line's file name; empty: the default
  std::string duration;  // audio/video: the duration hint (MediaDurationText); empty: none
  // sha256 of the object's bytes, 64 lower-case hex digits: the LLM's key of
  // the blocks the medium covers (prefix_cache.h).
  std::string object_sha256;
};

class MediaInfoSource {
 public:
  virtual ~MediaInfoSource() = default;
  // `url` as the chat part carries it (s3://..., file://...).
  virtual StatusOr<MediaObjectInfo> Lookup(std::string_view url) = 0;
};

// Parses the metadata the encoder writes; FailedPrecondition naming what is
// missing or malformed (object-sha256 and at least one of rows and ids).
StatusOr<MediaObjectInfo> MediaInfoFromMetadata(const ObjectMetadata& metadata);

struct StoreMediaInfoOptions {
  size_t max_entries = 65536;  // URIs remembered (about 200 bytes each)
  // gateway_media_lookups_total{result="cached|head|failed"} goes here; may be null.
  MetricsRegistry* metrics = nullptr;
};

// HEADs through the gateway's ObjectStore (the config's `store`, opened with
// its storeTimeoutMs as the request timeout). URLs outside that store (an
// http:// presigned URL, another bucket) are InvalidArgument.
class StoreMediaInfo final : public MediaInfoSource {
 public:
  // `store` must outlive this object.
  StoreMediaInfo(ObjectStore& store, StoreMediaInfoOptions options = {});

  StatusOr<MediaObjectInfo> Lookup(std::string_view url) override;

  uint64_t hits() const;
  uint64_t heads() const;

 private:
  StatusOr<MediaObjectInfo> HeadInfo(std::string_view url);

  ObjectStore& store_;
  LruCache<MediaObjectInfo> cache_;  // by URI, one per entry
  Counter* cached_ = nullptr;        // lookups answered from cache_
  Counter* head_ = nullptr;          // answered by a HEAD
  Counter* failed_ = nullptr;        // not answered: the scored prompt ends at the part
};

}  // namespace omni::gateway
