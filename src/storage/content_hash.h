// Content hashes as lower-case hex.
//  - SHA-256 (OpenSSL EVP): content addresses of tensor objects
//    (tensor_object.h), where a collision would serve wrong data.
//  - XXH3-128 (libxxhash): FsStore etags, a change detector that must cost
//    little next to writing the bytes (about 0.1 ms per 4 MB here, against
//    2.5 ms for SHA-256); 32 hex digits, the shape of S3's MD5 etags.
// Library headers stay in content_hash.cc.
//
// Thread-safety: the free functions are thread-safe; a hasher is used by one
// thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace omni {

// Hex digest of `bytes` (64 characters).
std::string Sha256Hex(std::string_view bytes);

// Raw 32-byte HMAC-SHA256 of `data` under `key` (SigV4 signing, the signed
// object URLs of signed_url.h).
std::string HmacSha256(std::string_view key, std::string_view data);

// Incremental form, for data that arrive in chunks.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(std::string_view bytes);
  // The digest of everything passed to Update; the hasher is then reset.
  std::string FinishHex();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// XXH3-128 in canonical (big-endian) byte order: 32 hex digits.
std::string Xxh128Hex(std::string_view bytes);

class Xxh128Hasher {
 public:
  Xxh128Hasher();
  ~Xxh128Hasher();
  Xxh128Hasher(const Xxh128Hasher&) = delete;
  Xxh128Hasher& operator=(const Xxh128Hasher&) = delete;

  void Update(std::string_view bytes);
  // The digest of everything passed to Update; the hasher is then reset.
  std::string FinishHex();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// True if `s` is 64 lower-case hex digits.
bool IsSha256Hex(std::string_view s);

}  // namespace omni
