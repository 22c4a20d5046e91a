// FsStore: an ObjectStore over a local directory, the single-machine default
// (URI file:///abs/dir). docs/STORAGE.md describes the layout in full:
//
//   <root>/<key>               the object's bytes, a plain file: the file://
//                              URL Presign returns works with any tool
//   <root>/<key>#<inode>       its metadata sidecar (JSON: size, etag,
//                              content type, user metadata), named by the
//                              inode of the data file it describes
//   <root>/<dir>/#tmp.<...>    temporaries of writers in progress
//
// Keys: ValidateObjectKey's (any UTF-8 without control characters: spaces,
// '&', '%', '+', '?', quotes, non-ASCII are all fine, stored as file names
// byte for byte), less three things FsStore refuses with InvalidArgument:
//  - '#' anywhere: every name containing '#' is FsStore's own (sidecars,
//    temporaries), so a key can never address or list one;
//  - '\' anywhere: path confinement (path_confine.h) refuses it in every
//    file path, so the file:// URL of such a key could not be fetched;
//  - more than 234 bytes between slashes (NAME_MAX less a sidecar's suffix).
// Files in the root that no key could name (not UTF-8, a control character,
// a backslash) are not objects: List skips them, Get refuses their names.
//
// Guarantees:
//  - Put is atomic: the bytes go to a temporary in the key's directory, are
//    fsynced, the sidecar is written and renamed into place, and only then is
//    the temporary renamed over the key. A reader sees the old object or the
//    new one, never a part; of concurrent writers of one key the last rename
//    wins and exactly one complete object remains.
//  - Object and metadata are never seen inconsistent: Head reads the sidecar
//    named by the inode of the data file it opened and checks its size; a
//    data file without a matching sidecar (written by a file:// PUT or by
//    hand) reports content type application/octet-stream, no user metadata
//    and an etag computed from the bytes.
//  - Etags are the XXH3-128 of the content, 32 lower-case hex digits (the
//    shape of S3's MD5 etags; a fast change detector, not a security digest).
//  - No symbolic link below the root is ever followed (each directory is
//    opened with O_NOFOLLOW relative to its parent, path_confine.h), so no
//    key can reach outside the root; a key crossing a link gets
//    PermissionDenied.
//  - A file system has no room for both "a" and "a/b": such a Put gets
//    FailedPrecondition (S3 allows it).
//
// Thread-safety: safe to call from many threads and processes at once.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/fs_io.h"
#include "storage/object_store.h"

namespace omni {

struct FsStoreOptions {
  // fsync the data and the directory before Put returns, so an acknowledged
  // object survives a power cut. Turn off only for scratch data.
  bool sync = true;
  // Also fsync the metadata sidecar (with `sync`). Off by default: it costs a
  // second fsync per Put (storage_bench: up to +55% on a 4 MB put+get), and
  // a sidecar lost in a power cut only makes Head report
  // the object's metadata as unknown (octet-stream, etag recomputed from the
  // bytes, no user metadata); the bytes and the name are durable either way.
  bool sync_sidecar = false;
  // Expire() removes temporaries and orphaned sidecars older than this:
  // leftovers of killed writers (a live writer's temporary is younger).
  std::chrono::seconds stale_temp_age{3600};
  // For tests: runs on the writing thread after each chunk (at most 1 MiB)
  // of an object's bytes has reached its temporary file.
  std::function<void(uint64_t bytes_written)> on_write_progress_for_testing;
};

class FsStore final : public ObjectStore {
 public:
  // Opens (creating it if missing) the directory named by "file:///abs/dir".
  static StatusOr<std::unique_ptr<FsStore>> Open(std::string_view uri, FsStoreOptions options = {});

  Status Put(std::string_view key, std::string_view data, const PutOptions& options = {}) override;
  Status PutFile(std::string_view key, const std::string& path, const PutOptions& options = {}) override;
  // A range starting at or past the end of a non-empty object is
  // InvalidArgument; one reaching past the end is cut at the end (as on S3).
  StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range = std::nullopt) override;
  Status GetStream(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) override;
  StatusOr<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  // Fills etag and content type from sidecars; metadata stays empty.
  StatusOr<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  // "file:///root/key", percent-encoded (PathToFileUrl: a space, '%', '?',
  // '"' and every non-ASCII byte are escaped, so FetchUrl decodes the URL
  // back to the key's path exactly). `ttl` cannot be enforced on a file and is only
  // checked to be positive. kGet refuses what Get refuses: a missing object
  // or a directory (NotFound), a symbolic link (PermissionDenied). For kPut
  // the key's directory is created and a link, directory or other non-file
  // at the key is refused; whoever writes there must replace the file
  // atomically (PutToUrl in url_fetch.h).
  StatusOr<std::string> Presign(std::string_view key, PresignMethod method, std::chrono::seconds ttl) override;
  // Objects by the mtime of their data file; also temporaries and orphaned
  // sidecars older than stale_temp_age in the directories it visits; empty
  // directories left behind are removed. Returns the number of objects.
  StatusOr<size_t> Expire(const std::vector<std::string>& prefixes, std::chrono::seconds max_age,
                          const Clock& clock) override;
  const std::string& uri() const override { return uri_; }

  // The absolute root directory, symbolic links resolved.
  const std::string& root() const { return root_; }

 private:
  // Yields an object's bytes in order; an empty view ends them.
  using ChunkSource = std::function<StatusOr<std::string_view>()>;
  struct OpenedObject;
  struct DirEntry;
  using DirVisitor = std::function<Status(int dir_fd, const std::string& rel_dir, std::vector<DirEntry>& entries)>;

  FsStore(std::string uri, std::string root, UniqueFd root_fd, FsStoreOptions options);

  Status WriteObject(std::string_view key, const PutOptions& options, const ChunkSource& next);
  Status Publish(int dir_fd, const std::string& leaf, const std::string& tmp, int fd, uint64_t size,
                 std::string etag, const PutOptions& options);
  StatusOr<OpenedObject> OpenObject(std::string_view key) const;
  Status ReadRange(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) const;
  // Calls `visit` for every directory below the root that may hold keys
  // starting with `prefix`, children before parents.
  Status WalkPrefix(std::string_view prefix, bool remove_empty_dirs, const DirVisitor& visit) const;
  Status WalkDir(int dir_fd, const std::string& rel_dir, std::string_view prefix, bool remove_empty_dirs,
                 const DirVisitor& visit) const;
  void RemoveEmptyParents(std::string_view rel_dir) const;

  const std::string uri_;
  const std::string root_;
  const UniqueFd root_fd_;  // every path is resolved beneath it
  const FsStoreOptions options_;
};

}  // namespace omni
