#include "storage/content_hash.h"

#include <gtest/gtest.h>

#include <string>

namespace omni {
namespace {

// FIPS 180-2, appendix B.
TEST(Sha256HexTest, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256HexTest, IncrementalMatchesOneShot) {
  std::string data(100'000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + 7);
  Sha256Hasher hasher;
  for (size_t i = 0; i < data.size(); i += 4096) hasher.Update(std::string_view(data).substr(i, 4096));
  EXPECT_EQ(hasher.FinishHex(), Sha256Hex(data));
  // The hasher is reset after FinishHex.
  hasher.Update("abc");
  EXPECT_EQ(hasher.FinishHex(), Sha256Hex("abc"));
}

TEST(Xxh128HexTest, KnownVectorsAndStreaming) {
  // The empty input's XXH3-128 as xxHash's own sanity checks list it.
  EXPECT_EQ(Xxh128Hex(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(Xxh128Hex("abc").size(), 32u);
  EXPECT_NE(Xxh128Hex("abc"), Xxh128Hex("abd"));
  std::string data(3'000'000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 3);
  Xxh128Hasher hasher;
  for (size_t i = 0; i < data.size(); i += 65'537) hasher.Update(std::string_view(data).substr(i, 65'537));
  EXPECT_EQ(hasher.FinishHex(), Xxh128Hex(data));
  EXPECT_EQ(hasher.FinishHex(), Xxh128Hex(""));  // reset after FinishHex
}

TEST(Sha256HexTest, IsSha256Hex) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex(""));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'A')));  // upper case is not our form
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'g')));
}

}  // namespace
}  // namespace omni
