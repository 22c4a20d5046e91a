#include "storage/signed_url.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <charconv>

#include <fmt/core.h>

#include "core/ascii.h"
#include "core/check.h"
#include "storage/content_hash.h"

namespace omni {
namespace {

bool IsUrlSafeKey(std::string_view key) {
  if (key.empty() || key.size() > 1024 || key.front() == '/' || key.find("..") != std::string_view::npos ||
      key.find("//") != std::string_view::npos) {
    return false;
  }
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '/';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

ObjectUrlSigner::ObjectUrlSigner(std::string secret) : secret_(std::move(secret)) {
  OMNI_CHECK(secret_.size() >= kMinSecretBytes) << "object URL secret shorter than " << kMinSecretBytes << " bytes";
}

StatusOr<ObjectUrlSigner> ObjectUrlSigner::FromSecret(std::string secret) {
  if (secret.size() < kMinSecretBytes) {
    return InvalidArgument(fmt::format("the object URL secret must be at least {} bytes", kMinSecretBytes));
  }
  return ObjectUrlSigner(std::move(secret));
}

ObjectUrlSigner ObjectUrlSigner::WithRandomSecret() {
  std::string secret(kMinSecretBytes, '\0');
  OMNI_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()), static_cast<int>(secret.size())) == 1)
      << "no random bytes for the object URL secret";
  return ObjectUrlSigner(std::move(secret));
}

std::string ObjectUrlSigner::Signature(std::string_view key, int64_t expires) const {
  return HexLower(HmacSha256(secret_, fmt::format("GET\n{}\n{}", key, expires)));
}

StatusOr<std::string> ObjectUrlSigner::SignedPath(std::string_view key, WallTime expires) const {
  if (!IsUrlSafeKey(key)) return InvalidArgument("only keys of [A-Za-z0-9._-] and '/' get signed URLs");
  const int64_t t = std::chrono::duration_cast<std::chrono::seconds>(expires.time_since_epoch()).count();
  return fmt::format("{}{}?expires={}&signature={}", kPathPrefix, key, t, Signature(key, t));
}

Status ObjectUrlSigner::Verify(std::string_view key, std::optional<std::string_view> expires,
                               std::optional<std::string_view> signature, WallTime now) const {
  if (!expires || !signature) return PermissionDenied("the URL is not signed (expires and signature are required)");
  int64_t t = 0;
  const auto [end, ec] = std::from_chars(expires->data(), expires->data() + expires->size(), t);
  if (ec != std::errc() || end != expires->data() + expires->size() || expires->empty()) {
    return PermissionDenied("the URL's expires is not a number of seconds");
  }
  if (!IsUrlSafeKey(key)) return PermissionDenied("the URL's signature does not match");
  const std::string want = Signature(key, t);
  if (signature->size() != want.size() || CRYPTO_memcmp(signature->data(), want.data(), want.size()) != 0) {
    return PermissionDenied("the URL's signature does not match");
  }
  if (std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() >= t) {
    return PermissionDenied("the URL has expired");
  }
  return Status::Ok();
}

}  // namespace omni
