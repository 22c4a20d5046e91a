#include "services/gateway/media_info.h"

#include <charconv>

#include "core/ascii.h"
#include "storage/content_hash.h"
#include "storage/open_store.h"
#include "text/chat_template.h"

namespace omni::gateway {
namespace {

const std::string* Find(const ObjectMetadata& metadata, std::string_view name) {
  for (const auto& [k, v] : metadata) {
    if (k == name) return &v;
  }
  return nullptr;
}

// An absent count is 0; a present one must be a non-negative integer.
bool ReadCount(const ObjectMetadata& metadata, std::string_view name, int64_t* out) {
  *out = 0;
  const std::string* v = Find(metadata, name);
  if (v == nullptr) return true;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), *out);
  return ec == std::errc() && end == v->data() + v->size() && *out >= 0 && *out <= (int64_t{1} << 24);
}

}  // namespace

StatusOr<MediaObjectInfo> MediaInfoFromMetadata(const ObjectMetadata& metadata) {
  MediaObjectInfo info;
  if (!ReadCount(metadata, "rows", &info.rows) || !ReadCount(metadata, "ids", &info.ids)) {
    return FailedPrecondition("the object's rows or ids metadata is not a count");
  }
  if (info.rows == 0 && info.ids == 0) return FailedPrecondition("the object's metadata names no rows or ids");
  const std::string* sha = Find(metadata, "object-sha256");
  if (sha == nullptr) return FailedPrecondition("the object's metadata has no object-sha256");
  info.object_sha256 = *sha;
  for (char& c : info.object_sha256) c = LowerAscii(c);
  if (!IsSha256Hex(info.object_sha256)) return FailedPrecondition("the object's object-sha256 is not a sha256");
  if (const std::string* mime = Find(metadata, "mime")) info.mime = *mime;
  if (const std::string* filename = Find(metadata, "filename")) info.filename = *filename;
  if (const std::string* seconds = Find(metadata, "seconds")) info.duration = MediaDurationText(*seconds);
  return info;
}

StoreMediaInfo::StoreMediaInfo(ObjectStore& store, StoreMediaInfoOptions options)
    : store_(store), cache_(options.max_entries) {
  if (options.metrics != nullptr) {
    CounterFamily& lookups = options.metrics->AddCounter(
        "gateway_media_lookups_total",
        "Chat media parts' object metadata looked up for the precise scorer, by result: cached, head (read "
        "from the store), failed (the scored prompt ends at the part).",
        {"result"});
    cached_ = &lookups.WithLabels({"cached"});
    head_ = &lookups.WithLabels({"head"});
    failed_ = &lookups.WithLabels({"failed"});
  }
}

StatusOr<MediaObjectInfo> StoreMediaInfo::Lookup(std::string_view url) {
  const std::string key_url(url);
  if (std::optional<MediaObjectInfo> hit = cache_.Get(key_url)) {
    if (cached_ != nullptr) cached_->Inc();
    return *std::move(hit);
  }
  StatusOr<MediaObjectInfo> info = HeadInfo(url);
  if (info.ok()) cache_.Put(key_url, *info);
  if (head_ != nullptr) (info.ok() ? head_ : failed_)->Inc();
  return info;
}

StatusOr<MediaObjectInfo> StoreMediaInfo::HeadInfo(std::string_view url) {
  OMNI_ASSIGN_OR_RETURN(std::string key, ObjectKeyInStore(store_.uri(), url));
  OMNI_ASSIGN_OR_RETURN(ObjectInfo head, store_.Head(key));
  return MediaInfoFromMetadata(head.metadata);
}

uint64_t StoreMediaInfo::hits() const { return cache_.hits(); }
uint64_t StoreMediaInfo::heads() const { return cache_.misses(); }

}  // namespace omni::gateway
