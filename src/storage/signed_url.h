// Signed, expiring URLs for objects of a local (file://) store: the local
// counterpart of S3 presigned GET URLs (DESIGN.md, "Code layout"). A file://
// URL is useless to a client on another machine, so the orchestrator hands
// out http URLs on its own client port and serves them after checking them:
//
//   /v1/objects/<key>?expires=<unix seconds>&signature=<hex HMAC-SHA256>
//
// The signature covers the method, the key and the expiry, so changing any of
// them (or reusing a signature for another key) is refused, like S3's
// presigned URLs: a bad or missing signature and an expired URL are 403.
//
//   ObjectUrlSigner signer(secret);
//   std::string path = signer.SignedPath("gen/vd/<sha>.png", now + 1h);
//   ...
//   OMNI_RETURN_IF_ERROR(signer.Verify(key, request.QueryParam("expires"), request.QueryParam("signature"), now));
//
// Thread-safety: immutable; thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace omni {

class ObjectUrlSigner {
 public:
  using WallTime = std::chrono::system_clock::time_point;
  static constexpr std::string_view kPathPrefix = "/v1/objects/";
  static constexpr size_t kMinSecretBytes = 32;

  // `secret`: at least kMinSecretBytes bytes (CHECKed; see FromSecret).
  explicit ObjectUrlSigner(std::string secret);
  // InvalidArgument for a secret that is too short.
  static StatusOr<ObjectUrlSigner> FromSecret(std::string secret);
  // A signer with a fresh random secret (its URLs die with the process).
  static ObjectUrlSigner WithRandomSecret();

  // The path and query of `key`'s URL valid until `expires`. The key must be
  // made of [A-Za-z0-9._-] and '/' (every key omniserve writes is), so it
  // needs no escaping; InvalidArgument otherwise.
  StatusOr<std::string> SignedPath(std::string_view key, WallTime expires) const;
  // Ok when `signature` signs `key` until `expires` and `now` is before it;
  // PermissionDenied saying which check failed otherwise.
  Status Verify(std::string_view key, std::optional<std::string_view> expires,
                std::optional<std::string_view> signature, WallTime now) const;

 private:
  std::string Signature(std::string_view key, int64_t expires) const;
  std::string secret_;
};

}  // namespace omni
