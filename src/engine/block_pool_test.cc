#include "engine/block_pool.h"

#include <gtest/gtest.h>

#include "engine/kv_cache.h"

namespace omni {
namespace {

TEST(KvCacheTest, BytesPerBlockAndBudget) {
  KvCacheSpec spec{/*num_layers=*/2, /*num_kv_heads=*/4, /*head_dim=*/8, DType::kBF16};
  EXPECT_EQ(BytesPerBlock(spec), 2 * 2 * 4 * 8 * 16 * 2);
  auto n = NumBlocksForBudget(spec, BytesPerBlock(spec) * 10 + 5);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 10);
  EXPECT_EQ(NumBlocksForBudget(spec, BytesPerBlock(spec) - 1).status().code(),
            StatusCode::kInvalidArgument);
  spec.num_layers = 0;
  EXPECT_FALSE(NumBlocksForBudget(spec, 1 << 20).ok());
}

TEST(KvCacheTest, TensorsPerLayer) {
  KvCacheSpec spec{2, 3, 4, DType::kF32};
  KvCache cache(spec, 5);
  EXPECT_EQ(cache.key(1).shape(), (Shape{5, kBlockSize, 3, 4}));
  EXPECT_EQ(cache.value(0).shape(), (Shape{5, kBlockSize, 3, 4}));
  EXPECT_EQ(cache.key(0).dtype(), DType::kF32);
  EXPECT_EQ(static_cast<size_t>(cache.nbytes()), 2 * 2 * cache.key(0).nbytes());
}

TEST(BlockPoolTest, AllocateReleaseRefCount) {
  BlockPool pool(4);
  std::vector<BlockId> a;
  std::vector<BlockHash> evicted;
  ASSERT_TRUE(pool.Allocate(3, &a, &evicted));
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_DOUBLE_EQ(pool.Usage(), 0.75);
  std::vector<BlockId> b;
  EXPECT_FALSE(pool.Allocate(2, &b, &evicted));  // all or nothing
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.num_free(), 1);

  pool.AddRef(a[0]);
  EXPECT_EQ(pool.ref_count(a[0]), 2);
  pool.Release(a);
  EXPECT_EQ(pool.ref_count(a[0]), 1);
  EXPECT_EQ(pool.num_free(), 3);
  pool.Release(std::vector<BlockId>{a[0]});
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_DOUBLE_EQ(pool.Usage(), 0.0);
  EXPECT_TRUE(evicted.empty());
}

TEST(BlockPoolTest, CachedBlocksEvictedLruAfterUncached) {
  BlockPool pool(4);
  std::vector<BlockId> ids;
  std::vector<BlockHash> evicted;
  ASSERT_TRUE(pool.Allocate(4, &ids, &evicted));
  ASSERT_TRUE(pool.Register(ids[0], 100));
  ASSERT_TRUE(pool.Register(ids[1], 101));
  ASSERT_TRUE(pool.Register(ids[2], 102));
  EXPECT_FALSE(pool.Register(ids[3], 100));  // content already cached elsewhere
  EXPECT_FALSE(pool.Register(ids[0], 200));  // already has a hash
  // Release order: 101, 100, uncached 3, 102.
  pool.Release(std::vector<BlockId>{ids[1], ids[0], ids[3], ids[2]});
  EXPECT_EQ(pool.num_cached(), 3);
  EXPECT_EQ(pool.Lookup(101), ids[1]);

  // The uncached block goes first, then cached ones in release order.
  std::vector<BlockId> got;
  ASSERT_TRUE(pool.Allocate(1, &got, &evicted));
  EXPECT_EQ(got[0], ids[3]);
  EXPECT_TRUE(evicted.empty());
  ASSERT_TRUE(pool.Allocate(2, &got, &evicted));
  EXPECT_EQ(got[1], ids[1]);
  EXPECT_EQ(got[2], ids[0]);
  EXPECT_EQ(evicted, (std::vector<BlockHash>{101, 100}));
  EXPECT_FALSE(pool.Lookup(101).has_value());
  EXPECT_EQ(pool.Lookup(102), ids[2]);
}

TEST(BlockPoolTest, HitTakesBlockOffFreeListAndRefreshesLru) {
  BlockPool pool(3);
  std::vector<BlockId> ids;
  std::vector<BlockHash> evicted;
  ASSERT_TRUE(pool.Allocate(2, &ids, &evicted));
  ASSERT_TRUE(pool.Register(ids[0], 1));
  ASSERT_TRUE(pool.Register(ids[1], 2));
  pool.Release(ids);  // LRU order: 1 then 2
  EXPECT_EQ(pool.num_free(), 3);
  pool.AddRef(ids[0]);  // hit on hash 1
  EXPECT_EQ(pool.num_free(), 2);
  pool.Release(std::vector<BlockId>{ids[0]});  // 1 is now the most recent
  std::vector<BlockId> got;
  ASSERT_TRUE(pool.Allocate(2, &got, &evicted));  // the never-used block, then hash 2
  EXPECT_EQ(evicted, (std::vector<BlockHash>{2}));
  EXPECT_EQ(pool.Lookup(1), ids[0]);
}

TEST(BlockPoolTest, ClearCacheOnlyWhenIdle) {
  BlockPool pool(2);
  std::vector<BlockId> ids;
  std::vector<BlockHash> evicted, cleared;
  ASSERT_TRUE(pool.Allocate(1, &ids, &evicted));
  ASSERT_TRUE(pool.Register(ids[0], 7));
  EXPECT_FALSE(pool.ClearCache(&cleared));
  pool.Release(ids);
  EXPECT_TRUE(pool.ClearCache(&cleared));
  EXPECT_EQ(cleared, (std::vector<BlockHash>{7}));
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_FALSE(pool.Lookup(7).has_value());
}

}  // namespace
}  // namespace omni
