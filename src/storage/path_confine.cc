#include "storage/path_confine.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/core.h>

#include "core/ascii.h"

namespace omni {
namespace {

std::string Shown(std::string_view text) { return std::string(text.substr(0, 200)); }

// "%2F" or "%2f" anywhere: a separator that only decoding would make.
bool HasEscapedSlash(std::string_view url) {
  for (size_t i = 0; i + 2 < url.size(); ++i) {
    if (url[i] == '%' && url[i + 1] == '2' && LowerAscii(url[i + 2]) == 'f') return true;
  }
  return false;
}

}  // namespace

Status ValidateRelativePath(std::string_view rel_path) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("path '{}' is refused: {}", Shown(rel_path), why));
  };
  if (rel_path.empty()) return bad("it is empty");
  if (rel_path.front() == '/') return bad("it is absolute");
  if (rel_path.find('\0') != std::string_view::npos) return bad("it contains NUL");
  if (rel_path.find('\\') != std::string_view::npos) return bad("it contains a backslash");
  size_t start = 0;
  while (start <= rel_path.size()) {
    size_t end = std::min(rel_path.find('/', start), rel_path.size());
    std::string_view segment = rel_path.substr(start, end - start);
    if (segment.empty()) return bad("it has an empty segment");
    if (segment == "." || segment == "..") return bad("it has a '.' or '..' segment");
    start = end + 1;
  }
  return Status::Ok();
}

StatusOr<std::string> ConfinedPathOfFileUrl(std::string_view url, std::string_view root) {
  if (HasEscapedSlash(url)) {
    return InvalidArgument(fmt::format("invalid file URL '{}': an escaped '/' (%2F) is not allowed", Shown(url)));
  }
  // FileUrlToPath is the single decoding; everything below sees decoded text.
  OMNI_ASSIGN_OR_RETURN(std::string path, FileUrlToPath(url));
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (root.empty() || root.front() != '/') return InvalidArgument("the confinement root must be an absolute path");
  std::string prefix = root == "/" ? "/" : std::string(root) + "/";
  if (!path.starts_with(prefix)) {
    return InvalidArgument(fmt::format("file URL '{}' is outside the allowed directory", Shown(url)));
  }
  std::string rel = path.substr(prefix.size());
  OMNI_RETURN_IF_ERROR(ValidateRelativePath(rel));
  return rel;
}

StatusOr<ConfinedFile> OpenFileBeneath(int root_fd, std::string_view rel_path) {
  OMNI_RETURN_IF_ERROR(ValidateRelativePath(rel_path));
  size_t slash = rel_path.rfind('/');
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : rel_path.substr(0, slash);
  ConfinedFile out;
  out.leaf = std::string(slash == std::string_view::npos ? rel_path : rel_path.substr(slash + 1));
  OMNI_ASSIGN_OR_RETURN(out.dir, OpenDirBeneath(root_fd, dir, /*create=*/false));
  const std::string shown = Shown(rel_path);
  // Look before opening, so that a device or FIFO is never opened at all
  // (opening some devices has effects); the fstat after the open closes the
  // race with a swap in between.
  struct stat before;
  if (::fstatat(out.dir.get(), out.leaf.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoStatus(errno, "opening " + shown);
  }
  if (S_ISLNK(before.st_mode)) return ErrnoStatus(ELOOP, "opening " + shown);
  if (!S_ISREG(before.st_mode)) return FailedPrecondition(shown + " is not a regular file");
  out.file = UniqueFd(::openat(out.dir.get(), out.leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!out.file.valid()) return ErrnoStatus(errno, "opening " + shown);
  if (::fstat(out.file.get(), &out.st) != 0) return ErrnoStatus(errno, "stat " + shown);
  if (!S_ISREG(out.st.st_mode)) return FailedPrecondition(shown + " is not a regular file");
  return out;
}

StatusOr<UniqueFd> OpenRootDir(std::string_view root) {
  std::string path(root);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, "opening directory " + path);
  return fd;
}

}  // namespace omni
