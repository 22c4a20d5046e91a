#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>

namespace omni {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskAndReturnsResults) {
  ThreadPool pool(3);
  std::vector<std::future<int>> futures;
  for (int i = 0; i < 100; ++i) futures.push_back(pool.Submit([i] { return i * i; }));
  long sum = 0;
  for (auto& f : futures) sum += f.get();
  EXPECT_EQ(sum, 328350);  // sum of squares 0..99
}

TEST(ThreadPoolTest, ShutdownDrainsQueuedWorkThenRefusesMore) {
  std::atomic<int> done{0};
  ThreadPool pool(2);
  for (int i = 0; i < 50; ++i) pool.Post([&] { done++; });
  pool.Shutdown();
  EXPECT_EQ(done.load(), 50);
  EXPECT_FALSE(pool.Post([&] { done++; }));
  EXPECT_EQ(done.load(), 50);
}

}  // namespace
}  // namespace omni
