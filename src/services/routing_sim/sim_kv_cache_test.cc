// SimKvCache: block accounting, prefix hits, LRU eviction and the KV events.
#include "services/routing_sim/sim_kv_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

namespace omni::routing_sim {
namespace {

using ::testing::ElementsAre;

std::vector<int32_t> BlockTokens(int32_t first) {
  std::vector<int32_t> t(kSimBlockSize);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Registers blocks[i] under hashes[i], chained.
void RegisterAll(SimKvCache& cache, const std::vector<int>& blocks, const std::vector<uint64_t>& hashes) {
  for (size_t i = 0; i < hashes.size(); ++i) {
    std::optional<uint64_t> parent;
    if (i > 0) parent = hashes[i - 1];
    cache.Register(blocks[i], hashes[i], parent, BlockTokens(static_cast<int32_t>(16 * i)));
  }
}

std::vector<uint64_t> RemovedKeys(const std::vector<WireKvEvent>& events) {
  std::vector<uint64_t> keys;
  for (const WireKvEvent& e : events) {
    if (const auto* r = std::get_if<WireBlockRemoved>(&e)) {
      for (const WireBlockHash& h : r->block_hashes) keys.push_back(h.key);
    }
  }
  return keys;
}

TEST(SimKvCache, RegisteredBlocksAreHitsAndStoredEvents) {
  SimKvCache cache(8);
  const std::vector<uint64_t> hashes = {11, 22, 33};
  std::vector<int> blocks;
  ASSERT_TRUE(cache.Allocate(hashes, 0, 4, &blocks));
  EXPECT_EQ(cache.used_blocks(), 4);
  RegisterAll(cache, blocks, hashes);
  std::vector<WireKvEvent> events = cache.TakeEvents();
  ASSERT_EQ(events.size(), 3u);
  const auto& second = std::get<WireBlockStored>(events[1]);
  EXPECT_EQ(second.block_hashes[0].key, 22u);
  ASSERT_TRUE(second.parent_block_hash.has_value());
  EXPECT_EQ(second.parent_block_hash->key, 11u);
  EXPECT_EQ(second.token_ids, BlockTokens(16));
  EXPECT_EQ(second.block_size, kSimBlockSize);
  EXPECT_FALSE(std::get<WireBlockStored>(events[0]).parent_block_hash.has_value());

  cache.Release(blocks);
  EXPECT_EQ(cache.used_blocks(), 0);  // cached but free blocks are not "used"
  EXPECT_EQ(cache.cached_blocks(), 3);
  EXPECT_EQ(cache.LongestCachedPrefix(std::vector<uint64_t>{11, 22, 99}), 2);
  EXPECT_EQ(cache.LongestCachedPrefix(std::vector<uint64_t>{99, 22}), 0);

  // A second request shares the cached head.
  std::vector<int> again;
  ASSERT_TRUE(cache.Allocate(hashes, 3, 5, &again));
  EXPECT_EQ(std::vector<int>(again.begin(), again.begin() + 3), std::vector<int>(blocks.begin(), blocks.begin() + 3));
  EXPECT_EQ(cache.used_blocks(), 5);
  EXPECT_TRUE(cache.TakeEvents().empty());
}

TEST(SimKvCache, LruEvictsTheTailOfThePromptFirst) {
  SimKvCache cache(3);
  std::vector<int> a;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{1, 2, 3}, 0, 3, &a));
  RegisterAll(cache, a, {1, 2, 3});
  cache.Release(a);  // last block first: 3, then 2, then 1 is the most recent
  cache.TakeEvents();

  std::vector<int> b;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{7}, 0, 1, &b));
  EXPECT_THAT(RemovedKeys(cache.TakeEvents()), ElementsAre(3u));
  EXPECT_EQ(cache.LongestCachedPrefix(std::vector<uint64_t>{1, 2, 3}), 2);

  std::vector<int> c;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{8}, 0, 2, &c));
  EXPECT_THAT(RemovedKeys(cache.TakeEvents()), ElementsAre(2u, 1u));
  EXPECT_EQ(cache.cached_blocks(), 0);
  EXPECT_EQ(cache.used_blocks(), 3);
}

TEST(SimKvCache, ReusedBlocksMoveToTheBackOfTheLru) {
  SimKvCache cache(2);
  std::vector<int> a, b;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{1}, 0, 1, &a));
  RegisterAll(cache, a, {1});
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{2}, 0, 1, &b));
  RegisterAll(cache, b, {2});
  cache.Release(a);
  cache.Release(b);  // LRU: 1, 2
  std::vector<int> hit;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{1}, 1, 1, &hit));
  cache.Release(hit);  // LRU: 2, 1
  cache.TakeEvents();
  std::vector<int> fresh;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{5}, 0, 1, &fresh));
  EXPECT_THAT(RemovedKeys(cache.TakeEvents()), ElementsAre(2u));
}

TEST(SimKvCache, AllocateFailsWithoutChangingAnything) {
  SimKvCache cache(4);
  std::vector<int> a;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{1, 2}, 0, 3, &a));
  RegisterAll(cache, a, {1, 2});
  cache.TakeEvents();
  std::vector<int> b;
  // 1 never-used block is free; the 3 referenced ones are not.
  EXPECT_FALSE(cache.Allocate(std::vector<uint64_t>{9}, 0, 2, &b));
  EXPECT_EQ(cache.used_blocks(), 3);
  EXPECT_EQ(cache.cached_blocks(), 2);
  EXPECT_TRUE(cache.TakeEvents().empty());
  // Hit blocks that are referenced already cost nothing.
  EXPECT_TRUE(cache.Allocate(std::vector<uint64_t>{1, 2}, 2, 3, &b));
  EXPECT_EQ(cache.used_blocks(), 4);
}

TEST(SimKvCache, ADuplicateHashStaysAnonymous) {
  SimKvCache cache(4);
  std::vector<int> a, b;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{1}, 0, 1, &a));
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{1}, 0, 1, &b));  // computed at the same time
  RegisterAll(cache, a, {1});
  RegisterAll(cache, b, {1});
  EXPECT_EQ(cache.TakeEvents().size(), 1u);
  cache.Release(b);
  cache.Release(a);
  EXPECT_EQ(cache.cached_blocks(), 1);
  // The anonymous block is free again and taken before any cached block.
  std::vector<int> c;
  ASSERT_TRUE(cache.Allocate(std::vector<uint64_t>{3}, 0, 3, &c));
  EXPECT_TRUE(RemovedKeys(cache.TakeEvents()).empty());
}

}  // namespace
}  // namespace omni::routing_sim
