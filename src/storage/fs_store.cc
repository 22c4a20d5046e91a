#include "storage/fs_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "storage/content_hash.h"
#include "storage/path_confine.h"

namespace omni {
namespace {

constexpr size_t kChunkBytes = 1u << 20;
constexpr size_t kMaxSidecarBytes = 1u << 20;
constexpr int kSidecarVersion = 1;

struct SplitKeyResult {
  std::string dir;   // "a/b", or "" for a key at the root
  std::string leaf;  // "c"
};

SplitKeyResult SplitKey(std::string_view key) {
  size_t slash = key.rfind('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

struct Sidecar {
  uint64_t ino = 0;
  uint64_t size = 0;
  std::string etag;
  std::string content_type;
  ObjectMetadata metadata;
};

std::string EncodeSidecar(const Sidecar& sidecar) {
  nlohmann::json metadata = nlohmann::json::array();
  for (const auto& [name, value] : sidecar.metadata) metadata.push_back({name, value});
  nlohmann::json j = {{"version", kSidecarVersion}, {"ino", sidecar.ino},
                      {"size", sidecar.size},       {"etag", sidecar.etag},
                      {"content_type", sidecar.content_type}, {"metadata", std::move(metadata)}};
  return j.dump();
}

// Nullopt for anything unreadable: a sidecar is advisory, never fatal.
std::optional<Sidecar> DecodeSidecar(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("version", 0) != kSidecarVersion) return std::nullopt;
  try {
    Sidecar s;
    s.ino = j.at("ino").get<uint64_t>();
    s.size = j.at("size").get<uint64_t>();
    s.etag = j.at("etag").get<std::string>();
    s.content_type = j.at("content_type").get<std::string>();
    for (const auto& entry : j.at("metadata")) {
      s.metadata.emplace_back(entry.at(0).get<std::string>(), entry.at(1).get<std::string>());
    }
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// The sidecar of the data file `st` in `dir_fd`, if one exists and matches.
std::optional<Sidecar> ReadSidecar(int dir_fd, const std::string& leaf, const struct stat& st) {
  UniqueFd fd(::openat(dir_fd, SidecarName(leaf, st.st_ino).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string text;
  if (!ReadAt(fd.get(), 0, kMaxSidecarBytes, &text, "sidecar").ok()) return std::nullopt;
  std::optional<Sidecar> sidecar = DecodeSidecar(text);
  if (!sidecar || sidecar->ino != st.st_ino || sidecar->size != static_cast<uint64_t>(st.st_size)) {
    return std::nullopt;
  }
  return sidecar;
}

// A file name holds at most 255 bytes (NAME_MAX); a sidecar appends '#' and
// up to 20 digits of an inode number to its object's name.
constexpr size_t kMaxSegmentBytes = 255 - 1 - 20;

// ValidateObjectKey plus what the file system and our layout add: no '#'
// (sidecars and temporaries are the names containing one, so no key can
// address or list them), no '\\' (path confinement refuses it in every file
// path, so a file:// URL of such a key could not be fetched), and no path
// segment longer than kMaxSegmentBytes.
Status ValidateFsKey(std::string_view key) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  if (key.find('#') != std::string_view::npos) {
    return InvalidObjectKey(key, "FsStore refuses '#' in keys (it names its own metadata and temporary files)");
  }
  if (key.find('\\') != std::string_view::npos) {
    return InvalidObjectKey(key, "FsStore refuses '\\' in keys (file paths may not contain it)");
  }
  size_t start = 0;
  while (start < key.size()) {
    size_t end = std::min(key.find('/', start), key.size());
    if (end - start > kMaxSegmentBytes) {
      return InvalidObjectKey(key, fmt::format("FsStore allows at most {} bytes between slashes (the file "
                                               "system's name limit)",
                                               kMaxSegmentBytes));
    }
    start = end + 1;
  }
  return Status::Ok();
}

Clock::WallTime MtimeOf(const struct stat& st) {
  auto since_epoch = std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  return Clock::WallTime(std::chrono::duration_cast<Clock::WallTime::duration>(since_epoch));
}

Status NoSuchObject(std::string_view key) {
  return NotFound(fmt::format("no object '{}'", key)).WithErrorCode("no_such_key");
}

// Turns a failed walk to a key's directory into the answer of a read: a
// missing directory or a file where a directory should be means no object.
Status ReadWalkError(const Status& s, std::string_view key) {
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kFailedPrecondition) return NoSuchObject(key);
  return Status(s).Annotate(fmt::format("object '{}'", key));
}

// [begin, end) of `range` within an object of `size` bytes.
StatusOr<std::pair<uint64_t, uint64_t>> ResolveRange(const std::optional<ByteRange>& range, uint64_t size,
                                                     std::string_view key) {
  if (!range) return std::pair<uint64_t, uint64_t>{0, size};
  if (range->length && *range->length == 0) return std::pair<uint64_t, uint64_t>{range->offset, range->offset};
  if (range->offset >= size && !(size == 0 && range->offset == 0)) {
    return InvalidArgument(fmt::format("range starting at byte {} is past the end of '{}' ({} bytes)",
                                       range->offset, key, size))
        .WithParam("range");
  }
  uint64_t end = size;
  if (range->length) end = std::min<uint64_t>(size, range->offset + *range->length);
  return std::pair<uint64_t, uint64_t>{range->offset, end};
}

}  // namespace

struct FsStore::OpenedObject {
  UniqueFd dir;
  UniqueFd file;
  std::string leaf;
  struct stat st {};
};

struct FsStore::DirEntry {
  enum class Kind { kData, kTemp, kSidecar };
  Kind kind = Kind::kData;
  std::string name;
  struct stat st {};
};

FsStore::FsStore(std::string uri, std::string root, UniqueFd root_fd, FsStoreOptions options)
    : uri_(std::move(uri)), root_(std::move(root)), root_fd_(std::move(root_fd)), options_(std::move(options)) {}

StatusOr<std::unique_ptr<FsStore>> FsStore::Open(std::string_view uri, FsStoreOptions options) {
  OMNI_ASSIGN_OR_RETURN(std::string path, FileUrlToPath(uri));
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return ErrnoStatus(ec.value(), "creating store directory " + path);
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return ErrnoStatus(errno, "resolving store directory " + path);
  std::string root(resolved);
  ::free(resolved);
  UniqueFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd.valid()) return ErrnoStatus(errno, "opening store directory " + root);
  return std::unique_ptr<FsStore>(new FsStore(std::string(uri), std::move(root), std::move(root_fd), std::move(options)));
}

Status FsStore::Put(std::string_view key, std::string_view data, const PutOptions& options) {
  bool done = false;
  return WriteObject(key, options, [&]() -> StatusOr<std::string_view> {
    if (done || data.empty()) return std::string_view();
    std::string_view chunk = data.substr(0, kChunkBytes);
    data.remove_prefix(chunk.size());
    done = data.empty();
    return chunk;
  });
}

Status FsStore::PutFile(std::string_view key, const std::string& path, const PutOptions& options) {
  UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!in.valid()) return ErrnoStatus(errno, "opening " + path);
  struct stat st;
  if (::fstat(in.get(), &st) != 0) return ErrnoStatus(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + " is not a regular file");
  std::string buffer;
  uint64_t offset = 0;
  return WriteObject(key, options, [&]() -> StatusOr<std::string_view> {
    OMNI_RETURN_IF_ERROR(ReadAt(in.get(), offset, kChunkBytes, &buffer, path));
    offset += buffer.size();
    return std::string_view(buffer);
  });
}

Status FsStore::WriteObject(std::string_view key, const PutOptions& options, const ChunkSource& next) {
  OMNI_RETURN_IF_ERROR(ValidateFsKey(key));
  SplitKeyResult split = SplitKey(key);
  UniqueFd dir_fd;
  UniqueFd fd;
  std::string tmp;
  // A concurrent Delete or Expire may remove the (then empty) directory
  // between our walk and the creation of the temporary; walk again if so.
  for (int attempt = 0;; ++attempt) {
    auto dir = OpenDirBeneath(root_fd_.get(), split.dir, /*create=*/true);
    if (!dir.ok()) {
      if (dir.status().code() == StatusCode::kFailedPrecondition) {
        return FailedPrecondition(fmt::format("cannot store '{}': a prefix of it is an object ({})", key,
                                              dir.status().message()));
      }
      return Status(dir.status()).Annotate(fmt::format("storing '{}'", key));
    }
    auto created = CreateTempFile(dir->get(), &tmp);
    if (created.ok()) {
      dir_fd = std::move(*dir);
      fd = std::move(*created);
      break;
    }
    if (created.status().code() != StatusCode::kNotFound || attempt == 3) {
      return Status(created.status()).Annotate(fmt::format("storing '{}'", key));
    }
  }

  Xxh128Hasher hasher;
  uint64_t size = 0;
  Status s;
  while (s.ok()) {
    StatusOr<std::string_view> chunk = next();
    if (!chunk.ok()) {
      s = chunk.status();
      break;
    }
    if (chunk->empty()) break;
    s = WriteAll(fd.get(), *chunk, tmp);
    hasher.Update(*chunk);
    size += chunk->size();
    if (s.ok() && options_.on_write_progress_for_testing) options_.on_write_progress_for_testing(size);
  }
  if (s.ok()) s = Publish(dir_fd.get(), split.leaf, tmp, fd.get(), size, hasher.FinishHex(), options);
  if (!s.ok()) {
    ::unlinkat(dir_fd.get(), tmp.c_str(), 0);
    return std::move(s).Annotate(fmt::format("storing '{}'", key));
  }
  return Status::Ok();
}

// Makes the fully written temporary `tmp` (open as `fd`) the object `leaf`.
Status FsStore::Publish(int dir_fd, const std::string& leaf, const std::string& tmp, int fd, uint64_t size,
                        std::string etag, const PutOptions& options) {
  if (options_.sync && ::fsync(fd) != 0) return ErrnoStatus(errno, "fsync " + tmp);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "stat " + tmp);
  // The sidecar goes first, so the moment the data appear their metadata are
  // already there; it is named by the temporary's inode, which the rename keeps.
  Sidecar sidecar{.ino = static_cast<uint64_t>(st.st_ino), .size = size, .etag = std::move(etag),
                  .content_type = options.content_type, .metadata = options.metadata};
  std::string sidecar_name = SidecarName(leaf, sidecar.ino);
  OMNI_RETURN_IF_ERROR(AtomicReplaceFile(dir_fd, sidecar_name, EncodeSidecar(sidecar), /*sync=*/false));
  if (options_.sync && options_.sync_sidecar) {
    // AtomicReplaceFile(sync=true) would fsync the directory twice per Put.
    UniqueFd sfd(::openat(dir_fd, sidecar_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!sfd.valid() || ::fsync(sfd.get()) != 0) {
      Status s = ErrnoStatus(errno, "fsync " + sidecar_name);
      ::unlinkat(dir_fd, sidecar_name.c_str(), 0);
      return s;
    }
  }
  // The object this rename replaces, held open until its sidecar is gone:
  // once its last link and descriptor go, the file system may give its
  // inode number to another writer's new temporary, and the sidecar name
  // derived from it would then be that writer's (a concurrent-writer test
  // lost the winner's metadata this way).
  struct stat old;
  UniqueFd old_fd(::openat(dir_fd, leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  bool had_old = old_fd.valid() && ::fstat(old_fd.get(), &old) == 0 && S_ISREG(old.st_mode);
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, leaf.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir_fd, sidecar_name.c_str(), 0);
    if (err == EISDIR || err == ENOTEMPTY || err == EEXIST) {
      return FailedPrecondition("the key is a prefix of other objects (a directory)");
    }
    return ErrnoStatus(err, "renaming the temporary into place");
  }
  // The replaced object's sidecar; if another writer raced us it may have
  // been a different file, and its orphaned sidecar waits for Expire.
  if (had_old && old.st_ino != st.st_ino) ::unlinkat(dir_fd, SidecarName(leaf, old.st_ino).c_str(), 0);
  if (options_.sync && ::fsync(dir_fd) != 0) return ErrnoStatus(errno, "fsync of the directory");
  return Status::Ok();
}

StatusOr<FsStore::OpenedObject> FsStore::OpenObject(std::string_view key) const {
  OMNI_RETURN_IF_ERROR(ValidateFsKey(key));
  auto opened = OpenFileBeneath(root_fd_.get(), key);
  // A directory is a prefix, not an object; a FIFO or device is no object
  // either. A symbolic link stays PermissionDenied: it is refused, not absent.
  if (!opened.ok()) return ReadWalkError(opened.status(), key);
  return OpenedObject{.dir = std::move(opened->dir), .file = std::move(opened->file),
                      .leaf = std::move(opened->leaf), .st = opened->st};
}

Status FsStore::ReadRange(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) const {
  OMNI_ASSIGN_OR_RETURN(OpenedObject object, OpenObject(key));
  OMNI_ASSIGN_OR_RETURN(auto span, ResolveRange(range, static_cast<uint64_t>(object.st.st_size), key));
  std::string buffer;
  for (uint64_t offset = span.first; offset < span.second;) {
    uint64_t want = std::min<uint64_t>(kChunkBytes, span.second - offset);
    OMNI_RETURN_IF_ERROR(ReadAt(object.file.get(), offset, want, &buffer, key));
    if (buffer.empty()) break;  // truncated in place by someone else; return what there was
    offset += buffer.size();
    if (!sink(buffer)) return Cancelled(fmt::format("reading '{}': the reader stopped", key));
  }
  return Status::Ok();
}

StatusOr<std::string> FsStore::Get(std::string_view key, std::optional<ByteRange> range) {
  OMNI_ASSIGN_OR_RETURN(OpenedObject object, OpenObject(key));
  OMNI_ASSIGN_OR_RETURN(auto span, ResolveRange(range, static_cast<uint64_t>(object.st.st_size), key));
  std::string out;
  OMNI_RETURN_IF_ERROR(ReadAt(object.file.get(), span.first, span.second - span.first, &out, key));
  return out;
}

Status FsStore::GetStream(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) {
  return ReadRange(key, range, sink);
}

StatusOr<ObjectInfo> FsStore::Head(std::string_view key) {
  OMNI_ASSIGN_OR_RETURN(OpenedObject object, OpenObject(key));
  ObjectInfo info;
  info.key = std::string(key);
  info.size = static_cast<uint64_t>(object.st.st_size);
  info.last_modified = MtimeOf(object.st);
  if (std::optional<Sidecar> sidecar = ReadSidecar(object.dir.get(), object.leaf, object.st)) {
    info.content_type = std::move(sidecar->content_type);
    info.etag = std::move(sidecar->etag);
    info.metadata = std::move(sidecar->metadata);
    return info;
  }
  // Written without FsStore (a file:// PUT, a person): describe the bytes.
  info.content_type = "application/octet-stream";
  Xxh128Hasher hasher;
  OMNI_RETURN_IF_ERROR(ReadRange(key, std::nullopt, [&](std::string_view chunk) {
    hasher.Update(chunk);
    return true;
  }));
  info.etag = hasher.FinishHex();
  return info;
}

Status FsStore::Delete(std::string_view key) {
  OMNI_RETURN_IF_ERROR(ValidateFsKey(key));
  SplitKeyResult split = SplitKey(key);
  auto dir = OpenDirBeneath(root_fd_.get(), split.dir, /*create=*/false);
  if (!dir.ok()) {
    Status s = ReadWalkError(dir.status(), key);
    return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
  }
  struct stat st;
  if (::fstatat(dir->get(), split.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Status::Ok() : ErrnoStatus(errno, fmt::format("deleting '{}'", key));
  }
  if (S_ISDIR(st.st_mode)) return Status::Ok();  // a prefix, not an object
  // Held open until the sidecar is gone, so the inode number naming it is
  // not reused by a concurrent writer in between (see Publish). The file
  // opened is the one whose sidecar is removed, even if the key was
  // replaced since the stat above.
  UniqueFd held(::openat(dir->get(), split.leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (held.valid()) ::fstat(held.get(), &st);
  if (::unlinkat(dir->get(), split.leaf.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, fmt::format("deleting '{}'", key));
  }
  ::unlinkat(dir->get(), SidecarName(split.leaf, st.st_ino).c_str(), 0);
  RemoveEmptyParents(split.dir);
  return Status::Ok();
}

void FsStore::RemoveEmptyParents(std::string_view rel_dir) const {
  while (!rel_dir.empty()) {
    size_t slash = rel_dir.rfind('/');
    std::string_view parent = slash == std::string_view::npos ? std::string_view() : rel_dir.substr(0, slash);
    std::string name(slash == std::string_view::npos ? rel_dir : rel_dir.substr(slash + 1));
    auto parent_fd = OpenDirBeneath(root_fd_.get(), parent, /*create=*/false);
    if (!parent_fd.ok() || ::unlinkat(parent_fd->get(), name.c_str(), AT_REMOVEDIR) != 0) return;
    rel_dir = parent;
  }
}

StatusOr<std::vector<ObjectInfo>> FsStore::List(std::string_view prefix) {
  std::vector<ObjectInfo> objects;
  OMNI_RETURN_IF_ERROR(WalkPrefix(prefix, /*remove_empty_dirs=*/false,
                                  [&](int dir_fd, const std::string& rel_dir, std::vector<DirEntry>& entries) {
    for (const DirEntry& entry : entries) {
      if (entry.kind != DirEntry::Kind::kData) continue;
      ObjectInfo info;
      info.key = rel_dir + entry.name;
      info.size = static_cast<uint64_t>(entry.st.st_size);
      info.last_modified = MtimeOf(entry.st);
      if (std::optional<Sidecar> sidecar = ReadSidecar(dir_fd, entry.name, entry.st)) {
        info.etag = std::move(sidecar->etag);
        info.content_type = std::move(sidecar->content_type);
      }
      objects.push_back(std::move(info));
    }
    return Status::Ok();
  }));
  std::sort(objects.begin(), objects.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return objects;
}

StatusOr<size_t> FsStore::Expire(const std::vector<std::string>& prefixes, std::chrono::seconds max_age,
                                 const Clock& clock) {
  if (max_age.count() < 0) return InvalidArgument("expiry age must not be negative").WithParam("max_age");
  const Clock::WallTime now = clock.WallNow();
  const Clock::WallTime object_cutoff = now - max_age;
  const Clock::WallTime stale_cutoff = now - options_.stale_temp_age;
  size_t removed = 0;
  size_t leftovers = 0;
  auto expire_dir = [&](int dir_fd, const std::string& /*rel_dir*/, std::vector<DirEntry>& entries) {
    std::map<std::string, ino_t> live;  // data file name -> inode, after this pass
    for (const DirEntry& entry : entries) {
      if (entry.kind == DirEntry::Kind::kData) {
        // Only keys under a prefix are data entries; the directory may hold others.
        bool expired = MtimeOf(entry.st) < object_cutoff;
        // The file is held open while its name and sidecar go (see Publish),
        // and skipped if a writer replaced it since the walk saw it.
        UniqueFd held;
        struct stat now_st;
        if (expired) {
          held = UniqueFd(::openat(dir_fd, entry.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
          expired = held.valid() && ::fstat(held.get(), &now_st) == 0 && now_st.st_ino == entry.st.st_ino;
        }
        if (expired && ::unlinkat(dir_fd, entry.name.c_str(), 0) == 0) {
          ::unlinkat(dir_fd, SidecarName(entry.name, entry.st.st_ino).c_str(), 0);
          ++removed;
        } else {
          live.emplace(entry.name, entry.st.st_ino);
        }
      } else if (entry.kind == DirEntry::Kind::kTemp && MtimeOf(entry.st) < stale_cutoff) {
        if (::unlinkat(dir_fd, entry.name.c_str(), 0) == 0) ++leftovers;
      }
    }
    for (const DirEntry& entry : entries) {
      std::string leaf;
      uint64_t ino = 0;
      if (entry.kind != DirEntry::Kind::kSidecar || MtimeOf(entry.st) >= stale_cutoff) continue;
      if (!ParseSidecarName(entry.name, &leaf, &ino)) continue;
      auto it = live.find(leaf);
      if (it != live.end() && it->second == ino) continue;
      // Not described data of ours; but the data may exist outside the
      // prefix filter, so check the directory itself before removing.
      struct stat st;
      if (::fstatat(dir_fd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == ino) continue;
      if (::unlinkat(dir_fd, entry.name.c_str(), 0) == 0) ++leftovers;
    }
    return Status::Ok();
  };
  for (const std::string& prefix : prefixes) {
    OMNI_RETURN_IF_ERROR(WalkPrefix(prefix, /*remove_empty_dirs=*/true, expire_dir));
  }
  if (leftovers > 0) OMNI_LOG(kInfo, "store {}: removed {} stale temporaries and orphaned sidecars", uri_, leftovers);
  return removed;
}

Status FsStore::WalkPrefix(std::string_view prefix, bool remove_empty_dirs, const DirVisitor& visit) const {
  // Only the directory part of the prefix is opened; it must be a valid key
  // path, so that ".." can never take the walk outside the root. A prefix no
  // key can have matches nothing.
  size_t slash = prefix.rfind('/');
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : prefix.substr(0, slash);
  if (!dir.empty() && !ValidateFsKey(dir).ok()) return Status::Ok();
  auto dir_fd = OpenDirBeneath(root_fd_.get(), dir, /*create=*/false);
  if (!dir_fd.ok()) {
    StatusCode code = dir_fd.status().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kFailedPrecondition) return Status::Ok();
    return dir_fd.status();
  }
  return WalkDir(dir_fd->get(), dir.empty() ? std::string() : std::string(dir) + "/", prefix, remove_empty_dirs,
                 visit);
}

Status FsStore::WalkDir(int dir_fd, const std::string& rel_dir, std::string_view prefix, bool remove_empty_dirs,
                        const DirVisitor& visit) const {
  int listing_fd = ::dup(dir_fd);  // fdopendir owns (and closedir closes) its fd
  if (listing_fd < 0) return ErrnoStatus(errno, "listing " + rel_dir);
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    ::close(listing_fd);
    return ErrnoStatus(errno, "listing " + rel_dir);
  }
  std::vector<DirEntry> entries;
  std::vector<std::string> subdirs;
  while (dirent* d = ::readdir(listing)) {
    std::string_view name = d->d_name;
    if (name == "." || name == "..") continue;
    DirEntry entry;
    entry.name = std::string(name);
    if (::fstatat(dir_fd, d->d_name, &entry.st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    if (name.find('#') != std::string_view::npos) {
      if (!S_ISREG(entry.st.st_mode)) continue;
      entry.kind = IsTempName(name) ? DirEntry::Kind::kTemp : DirEntry::Kind::kSidecar;
      entries.push_back(std::move(entry));
      continue;
    }
    std::string key = rel_dir + entry.name;
    if (S_ISDIR(entry.st.st_mode)) {
      std::string as_prefix = key + "/";
      if (as_prefix.starts_with(prefix) || prefix.starts_with(as_prefix)) subdirs.push_back(entry.name);
    } else if (S_ISREG(entry.st.st_mode) && key.starts_with(prefix) && ValidateFsKey(key).ok()) {
      // Symbolic links, other files and names no key can have (not UTF-8, a
      // control character, a backslash) are never objects.
      entries.push_back(std::move(entry));
    }
  }
  ::closedir(listing);
  for (const std::string& sub : subdirs) {
    UniqueFd sub_fd(::openat(dir_fd, sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub_fd.valid()) continue;  // removed or replaced meanwhile
    OMNI_RETURN_IF_ERROR(WalkDir(sub_fd.get(), rel_dir + sub + "/", prefix, remove_empty_dirs, visit));
    sub_fd.Reset();
    if (remove_empty_dirs) ::unlinkat(dir_fd, sub.c_str(), AT_REMOVEDIR);  // fails unless empty
  }
  return visit(dir_fd, rel_dir, entries);
}

StatusOr<std::string> FsStore::Presign(std::string_view key, PresignMethod method, std::chrono::seconds ttl) {
  OMNI_RETURN_IF_ERROR(ValidateFsKey(key));
  if (ttl.count() <= 0) return InvalidArgument("presigned URL lifetime must be positive").WithParam("ttl");
  // A file:// URL is read by tools that know nothing of our rules, so only
  // what Get would serve gets one: unlike S3, a missing object is NotFound
  // now, and a symbolic link is refused (a reader would follow it).
  if (method == PresignMethod::kGet) {
    OMNI_RETURN_IF_ERROR(OpenObject(key).status());
    return PathToFileUrl(root_ + "/" + std::string(key));
  }
  SplitKeyResult split = SplitKey(key);
  auto dir = OpenDirBeneath(root_fd_.get(), split.dir, /*create=*/true);
  if (!dir.ok()) return Status(dir.status()).Annotate(fmt::format("presigning '{}'", key));
  // A writer that opens the path instead of replacing it (not PutToUrl)
  // would follow a link at the leaf, so that is refused too.
  struct stat st;
  if (::fstatat(dir->get(), split.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) return ErrnoStatus(ELOOP, fmt::format("presigning '{}'", key));
    if (S_ISDIR(st.st_mode)) {
      return FailedPrecondition(fmt::format("presigning '{}': the key is a prefix of other objects (a directory)", key));
    }
    if (!S_ISREG(st.st_mode)) return FailedPrecondition(fmt::format("presigning '{}': not a regular file", key));
  } else if (errno != ENOENT) {
    return ErrnoStatus(errno, fmt::format("presigning '{}'", key));
  }
  return PathToFileUrl(root_ + "/" + std::string(key));
}

}  // namespace omni
