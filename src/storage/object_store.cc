#include "storage/object_store.h"

#include <set>

#include <fmt/core.h>

#include "core/utf8.h"

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

constexpr size_t kMaxKeyBytes = 1024;
constexpr size_t kShownKeyBytes = 64;

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

// The length of the UTF-8 sequence starting with `lead`, 0 for a byte that
// cannot start one. Only used to cut and escape messages, never to validate.
size_t Utf8SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

void AppendEscapedByte(unsigned char c, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  *out += "\\x";
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 15]);
}

}  // namespace

std::string ShownObjectKey(std::string_view key) {
  std::string out;
  size_t i = 0;
  while (i < key.size() && i < kShownKeyBytes) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    size_t n = Utf8SequenceLength(c);
    if (n == 1 && !IsControl(c)) {
      out.push_back(static_cast<char>(c));
    } else if (n > 1 && i + n <= key.size() && IsValidUtf8(key.substr(i, n))) {
      if (i + n > kShownKeyBytes) break;  // never cut a character in half
      out.append(key.substr(i, n));
      i += n;
      continue;
    } else {
      AppendEscapedByte(c, &out);  // a control character, or a byte that is not UTF-8
    }
    ++i;
  }
  if (i < key.size()) out += "...";
  return out;
}

Status InvalidObjectKey(std::string_view key, std::string_view why) {
  return InvalidArgument("invalid object key '" + ShownObjectKey(key) + "': " + std::string(why)).WithParam("key");
}

Status ValidateObjectKey(std::string_view key) {
  auto bad = [&](std::string_view why) { return InvalidObjectKey(key, why); };
  if (key.empty()) return bad("empty");
  if (key.size() > kMaxKeyBytes) return bad("longer than 1024 bytes");
  for (size_t i = 0; i < key.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    if (c == 0) return bad(fmt::format("contains a NUL byte (at byte {})", i));
    if (IsControl(c)) {
      return bad(fmt::format("contains the control character 0x{:02x} (at byte {})", static_cast<unsigned>(c), i));
    }
  }
  if (!IsValidUtf8(key)) return bad("is not valid UTF-8");
  if (key.front() == '/') return bad("starts with '/'");
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
