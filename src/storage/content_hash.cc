#include "storage/content_hash.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <xxhash.h>

#include "core/ascii.h"
#include "core/check.h"

namespace omni {

struct Sha256Hasher::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Sha256Hasher::Sha256Hasher() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  OMNI_CHECK(ctx_->md != nullptr) << "EVP_MD_CTX_new failed";
  OMNI_CHECK(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1) << "EVP_DigestInit_ex(sha256) failed";
}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(ctx_->md); }

void Sha256Hasher::Update(std::string_view bytes) {
  OMNI_CHECK(EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()) == 1) << "EVP_DigestUpdate failed";
}

namespace {

std::string ToHex(const unsigned char* bytes, size_t len) { return HexLower(bytes, len); }

std::string CanonicalHex(XXH128_hash_t hash) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  return ToHex(canonical.digest, sizeof canonical.digest);
}

}  // namespace

std::string Sha256Hasher::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  OMNI_CHECK(EVP_DigestFinal_ex(ctx_->md, digest, &len) == 1) << "EVP_DigestFinal_ex failed";
  OMNI_CHECK(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1) << "EVP_DigestInit_ex(sha256) failed";
  return ToHex(digest, len);
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256Hasher hasher;
  hasher.Update(bytes);
  return hasher.FinishHex();
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  unsigned char* ok = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &out_len);
  OMNI_CHECK(ok != nullptr) << "HMAC-SHA256 failed";
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

struct Xxh128Hasher::State {
  XXH3_state_t* state = nullptr;
};

Xxh128Hasher::Xxh128Hasher() : state_(std::make_unique<State>()) {
  state_->state = XXH3_createState();
  OMNI_CHECK(state_->state != nullptr) << "XXH3_createState failed";
  OMNI_CHECK(XXH3_128bits_reset(state_->state) == XXH_OK);
}

Xxh128Hasher::~Xxh128Hasher() { XXH3_freeState(state_->state); }

void Xxh128Hasher::Update(std::string_view bytes) {
  OMNI_CHECK(XXH3_128bits_update(state_->state, bytes.data(), bytes.size()) == XXH_OK);
}

std::string Xxh128Hasher::FinishHex() {
  std::string hex = CanonicalHex(XXH3_128bits_digest(state_->state));
  OMNI_CHECK(XXH3_128bits_reset(state_->state) == XXH_OK);
  return hex;
}

std::string Xxh128Hex(std::string_view bytes) { return CanonicalHex(XXH3_128bits(bytes.data(), bytes.size())); }

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace omni
