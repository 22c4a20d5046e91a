// LruCache: recency order, the cost bound, values over the bound, the first
// value kept for a key, and the hit and miss counts.
#include "core/lru_cache.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

TEST(LruCacheTest, EvictsTheLeastRecentlyUsedBeyondTheBound) {
  LruCache<int> cache(2);
  cache.Put("a", 1);
  cache.Put("b", 2);
  EXPECT_EQ(cache.Get("a"), 1);  // a is now the most recent
  cache.Put("c", 3);             // evicts b
  EXPECT_EQ(cache.Get("b"), std::nullopt);
  EXPECT_EQ(cache.Get("a"), 1);
  EXPECT_EQ(cache.Get("c"), 3);
  EXPECT_EQ(cache.total_cost(), 2u);
  EXPECT_EQ(cache.hits(), 3u);
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(LruCacheTest, CostsBoundTheTotalAndAValueOverTheBoundIsNotKept) {
  LruCache<std::string> cache(10, [](const std::string& v) { return v.size(); });
  cache.Put("x", "123456");
  cache.Put("y", "1234");
  EXPECT_EQ(cache.total_cost(), 10u);
  cache.Put("z", "12");  // 12 > 10: x, the least recent, goes
  EXPECT_EQ(cache.Get("x"), std::nullopt);
  EXPECT_EQ(cache.total_cost(), 6u);
  cache.Put("big", "12345678901");  // alone over the bound
  EXPECT_EQ(cache.Get("big"), std::nullopt);
  EXPECT_EQ(cache.Get("y"), "1234");
  cache.Put("y", "9");  // a key keeps its first value
  EXPECT_EQ(cache.Get("y"), "1234");
}

TEST(LruCacheTest, ABoundOfZeroKeepsNothing) {
  LruCache<int> cache(0);
  cache.Put("a", 1);
  EXPECT_EQ(cache.Get("a"), std::nullopt);
}

}  // namespace
}  // namespace omni
