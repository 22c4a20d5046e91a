// Path confinement: the one check between an untrusted path (an object key,
// the path of a client's file:// URL) and the file system. FsStore, FetchUrl,
// PutToUrl and the LLM's embedding fetcher all go through it, so a path that
// one of them refuses every one of them refuses.
//
// The rules, in order:
//  1. A file:// URL is percent-decoded exactly once. An escaped separator
//     ("%2F") is refused before decoding, so decoding cannot make one;
//     "%252e" decodes to the literal name "%2e", never to ".".
//  2. The decoded path is split at '/'; an empty, "." or ".." segment, a NUL
//     or a backslash refuses it. Nothing is normalized: "a//b" and "a/./b"
//     are refused rather than guessed at.
//  3. The path must lie beneath the root; what remains is opened beneath an
//     fd of the root, one segment at a time with O_NOFOLLOW (OpenDirBeneath),
//     so a symbolic link anywhere below the root is refused, never followed.
//  4. Only a regular file is a readable leaf: a directory, FIFO, socket or
//     device is refused (the leaf is opened O_NONBLOCK so a FIFO cannot hang).
//
// Callers that answer untrusted clients must not tell refused from missing
// (that would be an existence oracle); the codes below are for logs and for
// FsStore, which maps them.
//
// Thread-safety: free functions; thread-safe.
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>

#include "core/status.h"
#include "storage/fs_io.h"

namespace omni {

// Rule 2 for a relative path "a/b/c": InvalidArgument if it is empty,
// absolute, or has an empty, "." or ".." segment, a NUL or a backslash.
Status ValidateRelativePath(std::string_view rel_path);

// Rules 1 and 2 for a file:// URL ("file:///p" or "file://localhost/p"):
// its decoded path relative to `root`, an absolute directory path ("/" for
// the whole file system; a trailing '/' is ignored). InvalidArgument for a
// malformed URL, an escaped '/', a refused segment, or a path not strictly
// beneath `root`. The message names the URL, never file contents.
StatusOr<std::string> ConfinedPathOfFileUrl(std::string_view url, std::string_view root);

// A regular file opened beneath a root, with the directory that holds it.
struct ConfinedFile {
  UniqueFd dir;      // the leaf's directory
  UniqueFd file;     // O_RDONLY | O_NOFOLLOW | O_NONBLOCK
  std::string leaf;  // the last segment
  struct stat st {};
};

// Rules 2-4: opens the regular file `rel_path` beneath `root_fd`. Errors:
// InvalidArgument (a refused path), NotFound (missing), PermissionDenied (a
// symbolic link on the way or at the leaf), FailedPrecondition (a
// non-directory on the way, or a leaf that is not a regular file).
StatusOr<ConfinedFile> OpenFileBeneath(int root_fd, std::string_view rel_path);

// Opens the directory `root` (operator configuration, so links in the root
// itself are followed) for OpenFileBeneath and OpenDirBeneath.
StatusOr<UniqueFd> OpenRootDir(std::string_view root);

}  // namespace omni
