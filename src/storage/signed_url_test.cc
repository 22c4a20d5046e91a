#include "storage/signed_url.h"

#include <gtest/gtest.h>

#include "net/http.h"

namespace omni {
namespace {

using std::chrono::seconds;

const ObjectUrlSigner::WallTime kNow{seconds(1'800'000'000)};

// Splits a signed path into its key and query the way the server sees them.
struct Parsed {
  std::string key;
  std::optional<std::string> expires, signature;
};
Parsed Parse(const std::string& path) {
  const size_t q = path.find('?');
  Parsed p{path.substr(ObjectUrlSigner::kPathPrefix.size(), q - ObjectUrlSigner::kPathPrefix.size()), {}, {}};
  for (const auto& [k, v] : ParseQueryString(path.substr(q + 1))) {
    if (k == "expires") p.expires = v;
    if (k == "signature") p.signature = v;
  }
  return p;
}

TEST(ObjectUrlSigner, AcceptsItsOwnUrlUntilItExpires) {
  ObjectUrlSigner signer(std::string(32, 'k'));
  auto path = signer.SignedPath("gen/omni-vd/abc.png", kNow + seconds(3600));
  ASSERT_TRUE(path.ok());
  EXPECT_TRUE(path->starts_with("/v1/objects/gen/omni-vd/abc.png?expires=1800003600&signature="));
  const Parsed p = Parse(*path);
  EXPECT_EQ(p.key, "gen/omni-vd/abc.png");
  EXPECT_TRUE(signer.Verify(p.key, p.expires, p.signature, kNow).ok());
  EXPECT_TRUE(signer.Verify(p.key, p.expires, p.signature, kNow + seconds(3599)).ok());
  const Status expired = signer.Verify(p.key, p.expires, p.signature, kNow + seconds(3600));
  EXPECT_EQ(expired.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(expired.message().find("expired"), std::string::npos);
}

TEST(ObjectUrlSigner, RefusesTamperedUrls) {
  ObjectUrlSigner signer(std::string(32, 'k'));
  const Parsed p = Parse(*signer.SignedPath("gen/m/a.png", kNow + seconds(60)));
  auto denied = [&](std::string_view key, std::optional<std::string_view> e, std::optional<std::string_view> s) {
    return signer.Verify(key, e, s, kNow).code() == StatusCode::kPermissionDenied;
  };
  EXPECT_TRUE(denied("gen/m/b.png", p.expires, p.signature));       // another key
  EXPECT_TRUE(denied(p.key, "1800999999", p.signature));             // a later expiry
  std::string flipped = *p.signature;
  flipped[0] = flipped[0] == 'a' ? 'b' : 'a';
  EXPECT_TRUE(denied(p.key, p.expires, flipped));                   // a changed signature
  EXPECT_TRUE(denied(p.key, p.expires, p.signature->substr(1)));    // a short one
  EXPECT_TRUE(denied(p.key, std::nullopt, p.signature));            // unsigned
  EXPECT_TRUE(denied(p.key, p.expires, std::nullopt));
  EXPECT_TRUE(denied(p.key, "12x", p.signature));
  EXPECT_TRUE(denied("../etc/passwd", p.expires, p.signature));
  // Another secret's signature is not this one's.
  ObjectUrlSigner other(std::string(32, 'o'));
  EXPECT_TRUE(other.Verify(p.key, p.expires, p.signature, kNow).code() == StatusCode::kPermissionDenied);
  // Two random signers differ.
  const Parsed r = Parse(*ObjectUrlSigner::WithRandomSecret().SignedPath("k", kNow + seconds(60)));
  EXPECT_FALSE(ObjectUrlSigner::WithRandomSecret().Verify("k", r.expires, r.signature, kNow).ok());
}

TEST(ObjectUrlSigner, RefusesKeysThatNeedEscapingAndShortSecrets) {
  ObjectUrlSigner signer(std::string(32, 'k'));
  for (const char* key : {"", "/abs", "a b", "a?b", "a%2Fb", "a/../b", "a//b", "ü"}) {
    EXPECT_EQ(signer.SignedPath(key, kNow).status().code(), StatusCode::kInvalidArgument) << key;
  }
  EXPECT_EQ(ObjectUrlSigner::FromSecret("short").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ObjectUrlSigner::FromSecret(std::string(40, 'x')).ok());
}

}  // namespace
}  // namespace omni
