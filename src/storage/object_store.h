// ObjectStore: the data plane between omniserve's services. Encoder outputs,
// decoder outputs and cached embeddings are written once and passed by key or
// presigned URL, never inline (DESIGN.md, "Data plane").
//
// Implementations: FsStore (file:///abs/dir, one machine) and S3Store
// (s3://bucket/prefix?endpoint=...). OpenObjectStore() picks one by URI.
//
// Errors are typed through StatusCode so callers can decide what to retry:
//   kNotFound            no such key
//   kPermissionDenied    credentials or signature rejected, URL expired
//   kFailedPrecondition  a conditional request failed
//   kInvalidArgument     a bad key, range or URI (the caller's bug or input)
//   kUnavailable         transient: connection failed, 5xx, throttled; retry
//   kDeadlineExceeded    transient: a timeout; retry
// IsTransient() says which ones are worth retrying.
//
// Thread-safety: every implementation is safe to call from many threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace omni {

// User metadata, as `x-amz-meta-<name>` on S3. Names are lower-case ASCII.
using ObjectMetadata = std::vector<std::pair<std::string, std::string>>;

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string content_type;
  std::string etag;
  Clock::WallTime last_modified{};
  ObjectMetadata metadata;  // filled by Head(); List() may leave it empty
};

struct PutOptions {
  std::string content_type = "application/octet-stream";
  ObjectMetadata metadata;
};

// Bytes [offset, offset + length) of an object; no length: to the end.
struct ByteRange {
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

enum class PresignMethod { kGet, kPut };

// Receives an object's bytes in order; returning false aborts the read.
using ByteSink = std::function<bool(std::string_view chunk)>;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  virtual Status Put(std::string_view key, std::string_view data, const PutOptions& options = {}) = 0;
  // Uploads a local file (S3Store: multipart above its part size).
  virtual Status PutFile(std::string_view key, const std::string& path, const PutOptions& options = {}) = 0;
  // The whole object, or a range of it, in memory.
  virtual StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range = std::nullopt) = 0;
  // The object or range streamed to `sink` chunk by chunk.
  virtual Status GetStream(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) = 0;
  virtual StatusOr<ObjectInfo> Head(std::string_view key) = 0;
  // Deleting a missing key is not an error (as on S3).
  virtual Status Delete(std::string_view key) = 0;
  // Every object whose key starts with `prefix`, in lexicographic key order.
  virtual StatusOr<std::vector<ObjectInfo>> List(std::string_view prefix) = 0;
  // A URL that lets a holder without credentials GET or PUT this key until
  // `ttl` passes: http(s) for S3Store, file:// for FsStore.
  virtual StatusOr<std::string> Presign(std::string_view key, PresignMethod method, std::chrono::seconds ttl) = 0;
  // Deletes every object under any of `prefixes` last modified more than
  // `max_age` before clock.WallNow() and returns how many it deleted. The
  // default lists and deletes; FsStore also removes leftovers of killed
  // writers. Objects written while it runs may or may not be considered.
  virtual StatusOr<size_t> Expire(const std::vector<std::string>& prefixes, std::chrono::seconds max_age,
                                  const Clock& clock);
  // The URI the store was opened with (credentials never appear in it).
  virtual const std::string& uri() const = 0;
};

// True for errors that a retry may cure (kUnavailable, kDeadlineExceeded).
bool IsTransient(const Status& status);

// Keys are what S3 allows, less what no file system or log line should see:
// 1 to 1024 bytes of valid UTF-8 (spaces, '&', '%', '+', '?', '#', quotes,
// non-ASCII: all fine), with no control character (U+0000-U+001F, U+007F),
// no leading or trailing '/', and no empty, "." or ".." segment between
// slashes ("a//b", "a/./b", "../a" are refused). A key is raw bytes: never
// percent-decoded, never normalized (no Unicode normalization either, so
// "é" precomposed and decomposed are two keys, as on S3). S3Store encodes
// keys for the wire itself; callers pass them as they are.
// FsStore refuses a little more (fs_store.h): '#' (its own files) and '\'
// anywhere, and more than 234 bytes between slashes. Keys meant to work on
// both stores should keep to ValidateObjectKey minus those.
// InvalidArgument "invalid object key '<key>': <why>", parameter "key".
Status ValidateObjectKey(std::string_view key);

// The InvalidArgument ValidateObjectKey returns, for stores that refuse more:
// "invalid object key '<ShownObjectKey(key)>': <why>", parameter "key".
Status InvalidObjectKey(std::string_view key, std::string_view why);
// `key` as messages show it: at most its first 64 bytes (never half a
// character, "..." if cut), control characters and bytes that are not UTF-8
// written as \xNN, so that a message is always printable UTF-8.
std::string ShownObjectKey(std::string_view key);

}  // namespace omni
