#include "storage/fs_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include <fmt/core.h>

#include "core/ascii.h"

namespace omni {

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status ErrnoStatus(int err, std::string_view what) {
  std::string message = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return NotFound(std::move(message));
    case EACCES: case EPERM: case EROFS:
      return PermissionDenied(std::move(message));
    case ELOOP:
      return PermissionDenied(std::string(what) + ": refusing to follow a symbolic link");
    case ENOTDIR: case EISDIR: case EEXIST: case ENOTEMPTY:
      return FailedPrecondition(std::move(message));
    case ENAMETOOLONG:
      return InvalidArgument(std::move(message));
    case ENOSPC: case EDQUOT:
      return ResourceExhausted(std::move(message));
    case EIO: case EINTR: case EAGAIN:
      return Unavailable(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

namespace {

constexpr std::string_view kTempPrefix = "#tmp.";

uint64_t RandomBits() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

}  // namespace

std::string NewTempName() {
  static std::atomic<uint64_t> counter{0};
  size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  return fmt::format("{}{}.{:x}.{}.{:016x}", kTempPrefix, ::getpid(), tid & 0xffffffff, counter++, RandomBits());
}

bool IsTempName(std::string_view name) { return name.starts_with(kTempPrefix); }

std::string SidecarName(std::string_view leaf, uint64_t ino) { return fmt::format("{}#{}", leaf, ino); }

bool ParseSidecarName(std::string_view name, std::string* leaf, uint64_t* ino) {
  size_t hash = name.find('#');
  if (hash == 0 || hash == std::string_view::npos || name.find('#', hash + 1) != std::string_view::npos) return false;
  std::string_view digits = name.substr(hash + 1);
  if (digits.empty()) return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *ino);
  if (ec != std::errc() || end != digits.data() + digits.size()) return false;
  *leaf = std::string(name.substr(0, hash));
  return true;
}

Status WriteAll(int fd, std::string_view data, std::string_view what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, fmt::format("writing {}", what));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status ReadAt(int fd, uint64_t offset, uint64_t length, std::string* out, std::string_view what) {
  out->resize(length);
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd, out->data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, fmt::format("reading {}", what));
    }
    if (n == 0) break;  // shorter than expected: the caller sees the size
    done += static_cast<uint64_t>(n);
  }
  out->resize(done);
  return Status::Ok();
}

StatusOr<UniqueFd> CreateTempFile(int dir_fd, std::string* name) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    *name = NewTempName();
    int fd = ::openat(dir_fd, name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) return UniqueFd(fd);
    if (errno != EEXIST) return ErrnoStatus(errno, "creating a temporary file");
  }
  return Internal("creating a temporary file: every unique name was taken");
}

StatusOr<UniqueFd> OpenDirBeneath(int dir_fd, std::string_view rel_dir, bool create) {
  UniqueFd current(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!current.valid()) return ErrnoStatus(errno, "opening the store root");
  size_t start = 0;
  while (start < rel_dir.size()) {
    size_t end = rel_dir.find('/', start);
    if (end == std::string_view::npos) end = rel_dir.size();
    std::string segment(rel_dir.substr(start, end - start));
    std::string shown(rel_dir.substr(0, end));
    start = end + 1;
    if (segment.empty()) continue;
    constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(current.get(), segment.c_str(), kFlags);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(current.get(), segment.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus(errno, "creating directory " + shown);
      }
      fd = ::openat(current.get(), segment.c_str(), kFlags);
    }
    if (fd < 0) {
      int err = errno;
      // O_NOFOLLOW | O_DIRECTORY on a symlink gives ELOOP or ENOTDIR
      // depending on the kernel; tell the two apart for a clear message.
      struct stat st;
      if (err == ENOTDIR && ::fstatat(current.get(), segment.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        err = ELOOP;
      }
      if (err == ENOTDIR) return FailedPrecondition(shown + " exists and is not a directory");
      return ErrnoStatus(err, "opening directory " + shown);
    }
    current = UniqueFd(fd);
  }
  return current;
}

Status AtomicReplaceFile(int dir_fd, std::string_view name, std::string_view data, bool sync) {
  std::string tmp;
  OMNI_ASSIGN_OR_RETURN(UniqueFd fd, CreateTempFile(dir_fd, &tmp));
  auto fail = [&](Status s) {
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return s;
  };
  Status s = WriteAll(fd.get(), data, name);
  if (!s.ok()) return fail(std::move(s));
  if (sync && ::fsync(fd.get()) != 0) return fail(ErrnoStatus(errno, fmt::format("fsync {}", name)));
  if (::close(fd.Release()) != 0) return fail(ErrnoStatus(errno, fmt::format("closing {}", name)));
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, std::string(name).c_str()) != 0) {
    return fail(ErrnoStatus(errno, fmt::format("renaming a temporary over {}", name)));
  }
  if (sync) ::fsync(dir_fd);  // makes the rename durable; failure leaves the new file in place
  return Status::Ok();
}

StatusOr<std::string> FileUrlToPath(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("invalid file URL '" + std::string(url.substr(0, 200)) + "': " + std::string(why));
  };
  constexpr std::string_view kScheme = "file://";
  if (!url.starts_with(kScheme)) return bad("expected file:///absolute/path");
  std::string_view rest = url.substr(kScheme.size());
  if (rest.starts_with("localhost/")) rest.remove_prefix(std::string_view("localhost").size());
  if (!rest.starts_with('/')) return bad("only local absolute paths are supported (file:///path)");
  if (rest.find_first_of("?#") != std::string_view::npos) return bad("a query or fragment is not allowed");
  std::string path;
  path.reserve(rest.size());
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] != '%') {
      path.push_back(rest[i]);
      continue;
    }
    int hi = i + 2 < rest.size() ? HexDigitValue(rest[i + 1]) : -1;
    int lo = i + 2 < rest.size() ? HexDigitValue(rest[i + 2]) : -1;
    if (hi < 0 || lo < 0) return bad("malformed percent escape");
    char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return bad("escaped NUL");
    path.push_back(c);
    i += 2;
  }
  return path;
}

std::string PathToFileUrl(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string url = "file://";
  for (unsigned char c : path) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                std::string_view("-._~!$&'()*+,;=:@/").find(static_cast<char>(c)) != std::string_view::npos;
    if (keep) {
      url.push_back(static_cast<char>(c));
    } else {
      url.push_back('%');
      url.push_back(kHex[c >> 4]);
      url.push_back(kHex[c & 0xf]);
    }
  }
  return url;
}

}  // namespace omni
