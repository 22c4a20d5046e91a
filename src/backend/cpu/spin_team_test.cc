// The spin team (spin_team.h): every index runs exactly once on a thread
// index below the team's size, whatever the loop's length and run limit;
// loops stay exact while other threads hold every core (a worker the OS
// has not scheduled joins late or not at all); workers asleep after a long
// idle wake for the next loop; a loop started from inside a loop, or for
// another team size, is refused so the caller runs it itself.
#include "backend/cpu/spin_team.h"

#include <gtest/gtest.h>

#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "ops/test_util.h"
#include "ops/threading.h"

namespace omni::cpu {
namespace {

constexpr int kThreads = 2;  // the team's size is fixed by its first use in this binary

// The team is off until a process turns it on (the LLM engine does).
class SpinTeamTest : public ::testing::Test {
 protected:
  void SetUp() override { EnableTeam(true); }
};

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

TEST_F(SpinTeamTest, EveryIndexRunsExactlyOnce) {
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
TEST_F(SpinTeamTest, ManyShortLoopsInARow) {
  for (int round = 0; round < 20000; ++round) {
    Counts c(3);
    ASSERT_TRUE(TeamFor(kThreads, 3, Count, &c, 1));
    ExpectEachOnce(c, 3);
    if (HasFailure()) return;
  }
}

// Busy threads on every core, as libgomp's spinning workers or another
// process would be: workers are preempted at any point of the hand-over,
// and every loop still runs each index once (and ends: a lost hand-over
// would hang, which ctest's timeout fails).
TEST_F(SpinTeamTest, ExactWhileOtherThreadsHoldTheCores) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cores; ++i) {
    hogs.emplace_back([&stop] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  // Items of about a microsecond, so the worker often joins a loop.
  auto slow_count = [](void* ctx, int64_t i, int thread) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(1);
    while (std::chrono::steady_clock::now() < until) {
    }
    Count(ctx, i, thread);
  };
  int worker_items = 0;
  for (int round = 0; round < 1000 && !HasFailure(); ++round) {
    const int64_t n = 1 + round % 37;
    Counts c(n);
    ASSERT_TRUE(TeamFor(kThreads, n, slow_count, &c, round % 3));
    ExpectEachOnce(c, n);
    worker_items += c.by_thread[1].load();
  }
  stop.store(true);
  for (std::thread& t : hogs) t.join();
  EXPECT_GT(worker_items, 0) << "the worker never joined a loop";
}

// The workers sleep after 2 ms without a loop; the next loop wakes them.
// (A lost wake-up would hang here: ctest's timeout fails it.)
TEST_F(SpinTeamTest, WorkersWakeAfterSleeping) {
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    Counts c(4096);
    ASSERT_TRUE(TeamFor(kThreads, 4096, Count, &c));
    ExpectEachOnce(c, 4096);
  }
}

// Both threads work when the items are slow enough for the worker to join.
TEST_F(SpinTeamTest, TheWorkerTakesPartOfALongLoop) {
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

TEST_F(SpinTeamTest, RefusesWhatItCannotRun) {
  Counts c(8);
  EnableTeam(false);
  EXPECT_FALSE(TeamFor(kThreads, 8, Count, &c));  // off
  EnableTeam(true);
  EXPECT_FALSE(TeamFor(1, 8, Count, &c));             // one thread: the caller's own loop
  EXPECT_FALSE(TeamFor(kThreads + 1, 8, Count, &c));  // not the team's size
  // A loop started from inside a loop finds the team busy.
  struct Nested {
    std::atomic<int> refused{0}, ran{0}, outside{0};
  } nested;
  ASSERT_TRUE(TeamFor(
      kThreads, 4,
      [](void* ctx, int64_t, int) {
        Nested& n = *static_cast<Nested*>(ctx);
        n.ran.fetch_add(1);
        if (!TeamFor(kThreads, 1, [](void*, int64_t, int) {}, nullptr)) n.refused.fetch_add(1);
        if (!InTeamLoop()) n.outside.fetch_add(1);
      },
      &nested, 1));
  EXPECT_EQ(nested.ran.load(), 4);
  EXPECT_EQ(nested.refused.load(), 4);
  EXPECT_EQ(nested.outside.load(), 0) << "InTeamLoop() false inside a loop's body";
  EXPECT_FALSE(InTeamLoop());
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(c.runs[static_cast<size_t>(i)].load(), 0);
}

// The decode step's ops compute the same bits on the team as on OpenMP, at
// sizes that take their parallel paths (the engine switches between the two
// from step to step).
TEST_F(SpinTeamTest, OpsComputeTheSameOnTheTeamAsOnOpenMp) {
  ops::SetNumThreads(kThreads);  // the team's size, so its loops take these ops
  const ops::Linear linear(ops::testing::RandomTensor({1536, 1024}, DType::kBF16, 1));
  const Tensor x1 = ops::testing::RandomTensor({1, 1024}, DType::kF32, 2);
  const Tensor x8 = ops::testing::RandomTensor({8, 1024}, DType::kF32, 3);
  const Tensor rows = ops::testing::RandomTensor({16, 2048}, DType::kF32, 4);
  const Tensor norm_w = ops::testing::RandomTensor({2048}, DType::kF32, 5);
  const Tensor gate = ops::testing::RandomTensor({16, 2816}, DType::kBF16, 6);
  const Tensor up = ops::testing::RandomTensor({16, 2816}, DType::kBF16, 7);
  const Tensor q = ops::testing::RandomTensor({1, 16, 64}, DType::kBF16, 8);
  const Tensor k = ops::testing::RandomTensor({300, 4, 64}, DType::kBF16, 9);
  const Tensor v = ops::testing::RandomTensor({300, 4, 64}, DType::kBF16, 10);
  const Tensor heads = ops::testing::RandomTensor({32, 16, 64}, DType::kBF16, 11);
  std::vector<float> pos(32);
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<float>(100 + 7 * i);
  const Tensor positions = Tensor::FromFloats(pos, {32}, DType::kI64);
  ops::AttentionParams attention;
  attention.scale = 0.125f;
  ops::RopeParams rope;
  rope.inv_freq = ops::RopeInvFreq(64, 10000.0);
  auto run_all = [&] {
    return std::vector<Tensor>{linear.Forward(x1),
                               linear.Forward(x8),
                               ops::RmsNorm(rows, norm_w, 1e-5f),
                               ops::SwiGlu(gate, up),
                               ops::Silu(rows),
                               ops::Attention(q, k, v, attention),
                               ops::ApplyRope(heads, positions, rope)};
  };
  EnableTeam(false);
  const std::vector<Tensor> on_openmp = run_all();
  EnableTeam(true);
  const std::vector<Tensor> on_team = run_all();
  for (size_t i = 0; i < on_team.size(); ++i) {
    const std::vector<float> a = on_openmp[i].ToFloats(), b = on_team[i].ToFloats();
    ASSERT_EQ(a.size(), b.size()) << "op " << i;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "op " << i << " differs";
  }
}

}  // namespace
}  // namespace omni::cpu
