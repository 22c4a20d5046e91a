#include "storage/object_store.h"

#include <set>

namespace omni {

bool IsTransient(const Status& status) {
  return status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded;
}

StatusOr<size_t> ObjectStore::Expire(const std::vector<std::string>& prefixes, std::chrono::seconds max_age,
                                     const Clock& clock) {
  if (max_age.count() < 0) return InvalidArgument("expiry age must not be negative").WithParam("max_age");
  const Clock::WallTime cutoff = clock.WallNow() - max_age;
  std::set<std::string> expired;  // prefixes may overlap
  for (const std::string& prefix : prefixes) {
    OMNI_ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects, List(prefix));
    for (const ObjectInfo& info : objects) {
      if (info.last_modified < cutoff) expired.insert(info.key);
    }
  }
  for (const std::string& key : expired) OMNI_RETURN_IF_ERROR(Delete(key));
  return expired.size();
}

namespace {

bool IsKeyChar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '-': case '_': case '.': case '*': case '\'': case '(': case ')':
    case '/': case '=': case '+': case ',': case '@': case '~':
      return true;
    default:
      return false;
  }
}

}  // namespace

Status ValidateObjectKey(std::string_view key) {
  auto bad = [&](std::string_view why) {
    std::string shown(key.substr(0, 64));
    return InvalidArgument("invalid object key '" + shown + (key.size() > 64 ? "...'" : "'") + ": " + std::string(why))
        .WithParam("key");
  };
  if (key.empty()) return bad("empty");
  if (key.size() > 1024) return bad("longer than 1024 bytes");
  if (key.front() == '/') return bad("starts with '/'");
  for (unsigned char c : key) {
    if (!IsKeyChar(c)) return bad("contains a character outside [A-Za-z0-9!-_.*'()/=+,@~]");
  }
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view seg = key.substr(start, end - start);
    if (seg.empty() && end != key.size()) return bad("contains an empty path segment");
    if (seg == "." || seg == "..") return bad("contains a '.' or '..' segment");
    start = end + 1;
  }
  if (key.back() == '/') return bad("ends with '/'");
  return Status::Ok();
}

}  // namespace omni
