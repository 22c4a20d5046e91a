#include "engine/prefix_cache.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <numeric>

namespace omni {
namespace {

std::vector<int32_t> Iota(int n, int32_t first = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

Sha256Digest Digest(uint8_t fill) {
  Sha256Digest d;
  d.fill(fill);
  return d;
}

std::vector<BlockHash> Hashes(const std::vector<int32_t>& tokens, const std::vector<MediaSpan>& media = {},
                              std::string_view salt = "") {
  std::vector<BlockHash> h;
  ExtendBlockHashes(tokens, media, salt, &h);
  return h;
}

TEST(PrefixHashTest, DocumentedByteLayout) {
  const std::vector<int32_t> tokens = Iota(kBlockSize, 1000);
  const Sha256Digest d = Digest(0xab);
  std::vector<uint8_t> bytes;
  const uint64_t parent = 0x0102030405060708ull;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(parent >> (8 * i)));
  for (int32_t t : tokens) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(static_cast<uint32_t>(t) >> (8 * i)));
  }
  bytes.insert(bytes.end(), {1, 0, 0, 0});
  bytes.insert(bytes.end(), d.begin(), d.end());
  EXPECT_EQ(HashBlock(parent, tokens, std::vector<Sha256Digest>{d}), XXH3_64bits(bytes.data(), bytes.size()));
  EXPECT_EQ(RootHash("salt"), XXH3_64bits("salt", 4));
  EXPECT_EQ(Hashes(tokens)[0], HashBlock(RootHash(""), tokens, {}));
}

TEST(PrefixHashTest, OnlyFullBlocksAndIncremental) {
  std::vector<int32_t> tokens = Iota(40);
  std::vector<BlockHash> h = Hashes(tokens);
  EXPECT_EQ(h.size(), 2u);
  tokens.resize(48, 5);
  const BlockHash before = h[1];
  ExtendBlockHashes(tokens, {}, "", &h);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[1], before);
  EXPECT_EQ(h, Hashes(tokens));
}

TEST(PrefixHashTest, ChangingATokenChangesThatBlockAndAllLater) {
  const std::vector<int32_t> base = Iota(5 * kBlockSize);
  const std::vector<BlockHash> h0 = Hashes(base);
  for (int block = 0; block < 5; ++block) {
    std::vector<int32_t> changed = base;
    changed[block * kBlockSize + 7] += 1;
    const std::vector<BlockHash> h1 = Hashes(changed);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(h0[i] == h1[i], i < block) << "changed block " << block << ", hash " << i;
    }
  }
}

TEST(PrefixHashTest, ExtraKeysChangeOverlappedBlockAndLater) {
  const std::vector<int32_t> tokens = Iota(5 * kBlockSize);
  // An image over positions [40, 60): blocks 2 and 3.
  MediaSpan a{40, 20, Digest(1), {}};
  MediaSpan b{40, 20, Digest(2), {}};
  const auto plain = Hashes(tokens);
  const auto with_a = Hashes(tokens, {a});
  const auto with_b = Hashes(tokens, {b});
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(plain[i], with_a[i]);
    EXPECT_EQ(with_a[i], with_b[i]);
  }
  for (int i = 2; i < 5; ++i) {
    EXPECT_NE(plain[i], with_a[i]);
    EXPECT_NE(with_a[i], with_b[i]);
  }
  EXPECT_EQ(Hashes(tokens, {a}), with_a);  // deterministic
  EXPECT_NE(Hashes(tokens, {}, "tenant-1")[0], plain[0]);  // salt isolates
}

TEST(PrefixCacheTest, MatchTakeCommitAndEvents) {
  RecordingKvEventSink sink;
  PrefixCache cache(4, /*enabled=*/true, &sink);
  const std::vector<int32_t> tokens = Iota(3 * kBlockSize);
  const auto hashes = Hashes(tokens);
  std::vector<BlockId> table;
  ASSERT_TRUE(cache.Allocate(3, &table));
  cache.Commit(table, hashes, 0, 2, tokens);
  cache.Commit(table, hashes, 2, 3, tokens);
  ASSERT_EQ(sink.events.size(), 2u);
  const auto& first = std::get<BlockStored>(sink.events[0]);
  EXPECT_EQ(first.block_hashes, (std::vector<BlockHash>{hashes[0], hashes[1]}));
  EXPECT_FALSE(first.parent_hash.has_value());
  EXPECT_EQ(first.token_ids, Iota(2 * kBlockSize));
  EXPECT_EQ(first.block_size, kBlockSize);
  const auto& second = std::get<BlockStored>(sink.events[1]);
  EXPECT_EQ(second.parent_hash, hashes[1]);
  EXPECT_EQ(second.token_ids, Iota(kBlockSize, 2 * kBlockSize));

  EXPECT_EQ(cache.MatchPrefix(hashes, 3), 3);
  EXPECT_EQ(cache.MatchPrefix(hashes, 2), 2);
  cache.Free(&table);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(cache.pool().num_free(), 4);
  // 3 cached hits (all free) + 1 new = the whole pool.
  EXPECT_TRUE(cache.CanTake(hashes, 3, 1));
  EXPECT_FALSE(cache.CanTake(hashes, 3, 2));
  std::vector<BlockId> again;
  cache.TakeCached(hashes, 2, &again);
  EXPECT_EQ(cache.pool().ref_count(again[0]), 1);

  // Allocating 2 needs the uncached block and the LRU cached one. Free()
  // released the tail first, so hashes[2] is the least recently used.
  std::vector<BlockId> other;
  ASSERT_TRUE(cache.Allocate(2, &other));
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(std::get<BlockRemoved>(sink.events[2]).block_hashes, (std::vector<BlockHash>{hashes[2]}));
  EXPECT_EQ(cache.MatchPrefix(hashes, 3), 2);

  cache.Free(&again);
  cache.Free(&other);
  EXPECT_TRUE(cache.Reset());
  ASSERT_EQ(sink.events.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(sink.events[3]));
  EXPECT_EQ(cache.MatchPrefix(hashes, 3), 0);
}

TEST(PrefixCacheTest, StoredEventsCarryEachBlocksExtraKeys) {
  RecordingKvEventSink sink;
  PrefixCache cache(8, true, &sink);
  const std::vector<int32_t> tokens = Iota(4 * kBlockSize);
  // A key-only span (discrete ids) over [10, 20) and an injected one over
  // [20, 40): block 0 holds the first, block 1 both, block 2 the second.
  const std::vector<MediaSpan> media = {MediaSpan{10, 10, Digest(1), {}, /*key_only=*/true},
                                        MediaSpan{20, 20, Digest(2), {}}};
  const auto hashes = Hashes(tokens, media);
  EXPECT_NE(hashes[0], Hashes(tokens)[0]);  // a key-only span keys the server's hash too
  std::vector<BlockId> table;
  ASSERT_TRUE(cache.Allocate(4, &table));
  cache.Commit(table, hashes, 0, 4, tokens, media);
  ASSERT_EQ(sink.events.size(), 1u);
  const auto& stored = std::get<BlockStored>(sink.events[0]);
  ASSERT_EQ(stored.extra_keys.size(), 4u);
  EXPECT_EQ(stored.extra_keys[0], (std::vector<Sha256Digest>{Digest(1)}));
  EXPECT_EQ(stored.extra_keys[1], (std::vector<Sha256Digest>{Digest(1), Digest(2)}));
  EXPECT_EQ(stored.extra_keys[2], (std::vector<Sha256Digest>{Digest(2)}));
  EXPECT_TRUE(stored.extra_keys[3].empty());
  // The keys an event names are the keys its hashes were computed with.
  for (size_t i = 0; i < 4; ++i) {
    const BlockHash parent = i == 0 ? RootHash("") : hashes[i - 1];
    EXPECT_EQ(HashBlock(parent, std::span<const int32_t>(tokens).subspan(i * kBlockSize, kBlockSize),
                        stored.extra_keys[i]),
              hashes[i]);
  }

  // A run without media leaves the field empty (the wire omits it).
  sink.events.clear();
  const std::vector<int32_t> text = Iota(kBlockSize, 1000);
  std::vector<BlockId> other;
  ASSERT_TRUE(cache.Allocate(1, &other));
  cache.Commit(other, Hashes(text), 0, 1, text, {});
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_TRUE(std::get<BlockStored>(sink.events[0]).extra_keys.empty());
}

TEST(PrefixCacheTest, DuplicateContentBreaksTheStoredRun) {
  RecordingKvEventSink sink;
  PrefixCache cache(8, true, &sink);
  const std::vector<int32_t> tokens = Iota(3 * kBlockSize);
  const auto hashes = Hashes(tokens);
  std::vector<BlockId> a, b;
  ASSERT_TRUE(cache.Allocate(3, &a));
  ASSERT_TRUE(cache.Allocate(3, &b));
  cache.Commit(a, hashes, 1, 2, tokens);  // only block 1 stored by a
  sink.events.clear();
  cache.Commit(b, hashes, 0, 3, tokens);  // b: block 0 new, 1 duplicate, 2 new
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(std::get<BlockStored>(sink.events[0]).block_hashes, (std::vector<BlockHash>{hashes[0]}));
  EXPECT_EQ(std::get<BlockStored>(sink.events[1]).parent_hash, hashes[1]);
  EXPECT_EQ(std::get<BlockStored>(sink.events[1]).block_hashes, (std::vector<BlockHash>{hashes[2]}));
}

TEST(PrefixCacheTest, DisabledCachesNothing) {
  RecordingKvEventSink sink;
  PrefixCache cache(4, /*enabled=*/false, &sink);
  const std::vector<int32_t> tokens = Iota(kBlockSize);
  const auto hashes = Hashes(tokens);
  std::vector<BlockId> table;
  ASSERT_TRUE(cache.Allocate(1, &table));
  cache.Commit(table, hashes, 0, 1, tokens);
  cache.RecordQuery(16, 16);
  EXPECT_EQ(cache.MatchPrefix(hashes, 1), 0);
  EXPECT_TRUE(sink.events.empty());
  EXPECT_EQ(cache.query_tokens(), 0);
}

}  // namespace
}  // namespace omni
