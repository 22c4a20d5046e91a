// The spin team (spin_team.h): every index runs exactly once on a thread
// index below the team's size, whatever the loop's length and run limit;
// workers asleep after a long idle wake for the next loop; a loop started
// from inside a loop, or for another team size, is refused so the caller
// runs it itself.
#include "backend/cpu/spin_team.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace omni::cpu {
namespace {

constexpr int kThreads = 2;  // the team's size is fixed by its first use in this binary

struct Counts {
  std::vector<std::atomic<int>> runs;
  std::atomic<int> bad_thread{0};
  std::atomic<int> by_thread[kThreads] = {};
  explicit Counts(int64_t n) : runs(static_cast<size_t>(n)) {}
};

void Count(void* ctx, int64_t i, int thread) {
  Counts& c = *static_cast<Counts*>(ctx);
  c.runs[static_cast<size_t>(i)].fetch_add(1);
  if (thread < 0 || thread >= kThreads) {
    c.bad_thread.fetch_add(1);
  } else {
    c.by_thread[thread].fetch_add(1);
  }
}

void ExpectEachOnce(const Counts& c, int64_t n) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += c.runs[static_cast<size_t>(i)].load() != 1;
  EXPECT_EQ(wrong, 0) << "indices not run exactly once, of " << n;
  EXPECT_EQ(c.bad_thread.load(), 0);
  EXPECT_EQ(c.by_thread[0].load() + c.by_thread[1].load(), n);
}

TEST(SpinTeamTest, EveryIndexRunsExactlyOnce) {
  for (int64_t max_run : {int64_t{0}, int64_t{1}, int64_t{3}}) {
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{64}, int64_t{1000}, int64_t{100000}}) {
      Counts c(n);
      ASSERT_TRUE(TeamFor(kThreads, n, Count, &c, max_run)) << "n " << n;
      ExpectEachOnce(c, n);
    }
  }
  EXPECT_TRUE(TeamFor(kThreads, 0, Count, nullptr));  // nothing to do
}

// Many short loops back to back: the hand-over between loops loses none.
TEST(SpinTeamTest, ManyShortLoopsInARow) {
  for (int round = 0; round < 20000; ++round) {
    Counts c(3);
    ASSERT_TRUE(TeamFor(kThreads, 3, Count, &c, 1));
    ExpectEachOnce(c, 3);
    if (HasFailure()) return;
  }
}

// The workers sleep after 2 ms without a loop; the next loop wakes them.
// (A lost wake-up would hang here: ctest's timeout fails it.)
TEST(SpinTeamTest, WorkersWakeAfterSleeping) {
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    Counts c(4096);
    ASSERT_TRUE(TeamFor(kThreads, 4096, Count, &c));
    ExpectEachOnce(c, 4096);
  }
}

// Both threads work when the items are slow enough for the worker to join.
TEST(SpinTeamTest, TheWorkerTakesPartOfALongLoop) {
  Counts c(64);
  ASSERT_TRUE(TeamFor(
      kThreads, 64,
      [](void* ctx, int64_t i, int thread) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        Count(ctx, i, thread);
      },
      &c, 1));
  ExpectEachOnce(c, 64);
  EXPECT_GT(c.by_thread[1].load(), 0);
}

TEST(SpinTeamTest, RefusesWhatItCannotRun) {
  Counts c(8);
  EXPECT_FALSE(TeamFor(1, 8, Count, &c));             // one thread: the caller's own loop
  EXPECT_FALSE(TeamFor(kThreads + 1, 8, Count, &c));  // not the team's size
  // A loop started from inside a loop finds the team busy.
  struct Nested {
    std::atomic<int> refused{0}, ran{0};
  } nested;
  ASSERT_TRUE(TeamFor(
      kThreads, 4,
      [](void* ctx, int64_t, int) {
        Nested& n = *static_cast<Nested*>(ctx);
        n.ran.fetch_add(1);
        if (!TeamFor(kThreads, 1, [](void*, int64_t, int) {}, nullptr)) n.refused.fetch_add(1);
      },
      &nested, 1));
  EXPECT_EQ(nested.ran.load(), 4);
  EXPECT_EQ(nested.refused.load(), 4);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(c.runs[static_cast<size_t>(i)].load(), 0);
}

}  // namespace
}  // namespace omni::cpu
