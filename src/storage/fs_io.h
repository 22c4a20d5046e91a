// POSIX file helpers shared by FsStore and file:// URL fetching: an owning fd,
// errno -> Status, symlink-proof directory walks and atomic replacement
// (temporary + fsync + rename). Also the reserved names of FsStore's on-disk
// layout (docs/STORAGE.md), so that a file:// PUT and FsStore agree on them.
//
// Every reserved name contains '#', which FsStore refuses in keys (and
// PutToUrl in file names), so no key can address or list a temporary or a
// sidecar.
//
// Thread-safety: free functions are thread-safe; a UniqueFd is not shared.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace omni {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.Release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset();

 private:
  int fd_ = -1;
};

// Maps errno values to the codes callers act on: ENOENT -> NotFound,
// EACCES/EPERM/EROFS -> PermissionDenied, ELOOP -> PermissionDenied (a
// symbolic link we refuse to follow), ENOTDIR/EISDIR/EEXIST/ENOTEMPTY ->
// FailedPrecondition, ENOSPC/EDQUOT -> ResourceExhausted, EIO/EINTR/EAGAIN ->
// Unavailable, anything else -> Internal. The message is "<what>: <strerror>".
Status ErrnoStatus(int err, std::string_view what);

// "#tmp.<pid>.<tid>.<counter>.<random>": unique across processes and threads.
std::string NewTempName();
bool IsTempName(std::string_view name);
// The metadata sidecar of the data file `leaf` whose inode is `ino`:
// "<leaf>#<ino>". Naming it by inode ties it to one data file, so a sidecar
// can never describe bytes other than those it was written for.
std::string SidecarName(std::string_view leaf, uint64_t ino);
// The inverse of SidecarName; false for any other name.
bool ParseSidecarName(std::string_view name, std::string* leaf, uint64_t* ino);

// write() until done, retrying EINTR.
Status WriteAll(int fd, std::string_view data, std::string_view what);
// pread() into `out` (resized to what was read) `length` bytes from `offset`.
Status ReadAt(int fd, uint64_t offset, uint64_t length, std::string* out, std::string_view what);

// Creates a new temporary file (mode 0644 less umask) in `dir_fd`.
StatusOr<UniqueFd> CreateTempFile(int dir_fd, std::string* name);

// Opens the directory `rel_dir` ("a/b", or "" for `dir_fd` itself) beneath
// `dir_fd` one segment at a time with O_NOFOLLOW, so no symbolic link (and
// hence no escape from `dir_fd`) is ever followed; with `create`, missing
// segments are made. Errors: PermissionDenied for a symbolic link,
// FailedPrecondition for a segment that is not a directory, NotFound.
StatusOr<UniqueFd> OpenDirBeneath(int dir_fd, std::string_view rel_dir, bool create);

// Writes `data` to a temporary in `dir_fd`, fsyncs it (with `sync`) and
// renames it over `name`: readers see the old file or the new one. The
// directory itself is fsynced too with `sync`. On failure the temporary is gone.
Status AtomicReplaceFile(int dir_fd, std::string_view name, std::string_view data, bool sync);

// file:// URLs. "file:///abs/path" (or "file://localhost/abs/path") ->
// "/abs/path", percent-decoded. InvalidArgument for another scheme or host, a
// relative path, a query or fragment, a malformed escape or an escaped NUL.
StatusOr<std::string> FileUrlToPath(std::string_view url);
// The inverse: "/abs/a b" -> "file:///abs/a%20b". Unreserved characters,
// sub-delimiters ("!$&'()*+,;="), ':', '@' and '/' stay as they are; every
// other byte ('%', '?', '#', '"', a space, each byte of a non-ASCII
// character, ...) becomes %XX, so FileUrlToPath gives back `path` exactly.
std::string PathToFileUrl(std::string_view path);

}  // namespace omni
