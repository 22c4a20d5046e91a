// The collectives over Gloo on loopback, ranks as threads: what each rank
// receives, and what a rank that never joins, dies or stops answering does
// to the others (an Unavailable within the timeout, never a hang).
#include "parallel/collective.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "parallel/gloo_collective.h"
#include "parallel/loopback_group_testing.h"

namespace omni::parallel {
namespace {

using namespace std::chrono_literals;
using testing::LoopbackOptions;
using testing::RendezvousDir;
using testing::RunLoopbackGroup;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Floats rank `from` sends to rank `to`: uneven, some ranks none.
int64_t Count(int from, int to) { return (from + 2 * to) % 3 + (from == to ? 1 : 0); }
float Value(int from, int to, int64_t i) { return static_cast<float>(from * 10000 + to * 1000 + i); }

void CheckAllToAllV(Collective& group) {
  const int n = group.size(), me = group.rank();
  std::vector<float> send;
  std::vector<int64_t> send_counts, recv_counts;
  for (int to = 0; to < n; ++to) {
    send_counts.push_back(Count(me, to));
    recv_counts.push_back(Count(to, me));
    for (int64_t i = 0; i < Count(me, to); ++i) send.push_back(Value(me, to, i));
  }
  int64_t total = 0;
  for (int64_t c : recv_counts) total += c;
  std::vector<float> recv(static_cast<size_t>(total), -1.f);
  ASSERT_TRUE(group.AllToAllV(send, send_counts, recv, recv_counts).ok());
  size_t at = 0;
  for (int from = 0; from < n; ++from) {
    for (int64_t i = 0; i < Count(from, me); ++i) {
      EXPECT_EQ(recv[at++], Value(from, me, i)) << "rank " << me << " from " << from << " element " << i;
    }
  }
}

class CollectiveSizeTest : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveSizeTest, AllToAllVSendsEachRankItsPartUnevenCountsToo) {
  RunLoopbackGroup(GetParam(), [](Collective& group) {
    for (int round = 0; round < 3; ++round) CheckAllToAllV(group);
  });
}

TEST_P(CollectiveSizeTest, AllGatherVConcatenatesInRankOrder) {
  RunLoopbackGroup(GetParam(), [](Collective& group) {
    const int n = group.size(), me = group.rank();
    std::vector<int64_t> counts;
    for (int r = 0; r < n; ++r) counts.push_back(r == 1 ? 0 : 2 * r + 1);  // rank 1 sends nothing
    std::vector<float> send;
    for (int64_t i = 0; i < counts[static_cast<size_t>(me)]; ++i) send.push_back(Value(me, 0, i));
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<float> recv(static_cast<size_t>(total), -1.f);
    ASSERT_TRUE(group.AllGatherV(send, recv, counts).ok());
    size_t at = 0;
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < counts[static_cast<size_t>(r)]; ++i) EXPECT_EQ(recv[at++], Value(r, 0, i));
    }
  });
}

TEST_P(CollectiveSizeTest, BroadcastSendsTheRootsBytesWhateverTheirLength) {
  RunLoopbackGroup(GetParam(), [](Collective& group) {
    const int root = group.size() - 1;
    std::string want(100000, '\0');
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<char>(i * 7 + 3);
    std::string bytes = group.rank() == root ? want : "something else";
    ASSERT_TRUE(group.Broadcast(&bytes, root).ok());
    EXPECT_EQ(bytes, want);
    std::string empty = group.rank() == 0 ? "" : "stale";
    ASSERT_TRUE(group.Broadcast(&empty, 0).ok());
    EXPECT_EQ(empty, "");
    EXPECT_TRUE(group.Barrier().ok());
    EXPECT_EQ(group.Broadcast(&bytes, group.size()).code(), StatusCode::kInvalidArgument);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectiveSizeTest, ::testing::Values(2, 3, 4));

TEST(CollectiveTest, MismatchedCountsAreRefusedBeforeAnyExchange) {
  RunLoopbackGroup(2, [](Collective& group) {
    std::vector<float> send(3), recv(3);
    const int64_t wrong[] = {1, 1};
    const int64_t right[] = {1, 2};
    EXPECT_EQ(group.AllToAllV(send, wrong, recv, right).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(group.AllGatherV(send, recv, wrong).code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(group.Barrier().ok());  // the group still works
  });
}

TEST(CollectiveTest, SingleRankCopies) {
  auto group = ConnectGloo({.rank = 0, .size = 1});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ((*group)->size(), 1);
  const std::vector<float> send = {1, 2, 3};
  std::vector<float> recv(3);
  const int64_t counts[] = {3};
  ASSERT_TRUE((*group)->AllToAllV(send, counts, recv, counts).ok());
  EXPECT_EQ(recv, send);
  recv.assign(3, 0);
  ASSERT_TRUE((*group)->AllGatherV(send, recv, counts).ok());
  EXPECT_EQ(recv, send);
  std::string bytes = "x";
  EXPECT_TRUE((*group)->Broadcast(&bytes, 0).ok());
  EXPECT_EQ(bytes, "x");
  EXPECT_TRUE((*group)->Barrier().ok());
}

TEST(CollectiveTest, RefusesBadOptions) {
  EXPECT_EQ(ConnectGloo({.rank = 2, .size = 2}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConnectGloo({.rank = 0, .size = 2}).status().code(), StatusCode::kInvalidArgument);  // no directory
}

TEST(CollectiveTest, ARankThatNeverJoinsFailsTheOthersWithinTheTimeout) {
  RendezvousDir dir;
  const auto start = std::chrono::steady_clock::now();
  auto group = ConnectGloo(LoopbackOptions(dir, 0, 2, 1500ms));
  const double waited = SecondsSince(start);
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(group.status().message().find("could not join"), std::string::npos) << group.status().ToString();
  std::printf("never joined: Unavailable after %.2f s: %s\n", waited, group.status().message().c_str());
  EXPECT_GE(waited, 1.0);
  EXPECT_LT(waited, 10.0);
}

// Connects two ranks, then runs `rank0` on rank 0 and `rank1` on rank 1 (which
// owns its group and may drop it, as a process that dies closes its sockets).
void RunPair(const std::function<void(Collective&)>& rank0,
             const std::function<void(std::unique_ptr<Collective>)>& rank1, std::chrono::milliseconds timeout) {
  RendezvousDir dir;
  std::thread peer([&] {
    auto group = ConnectGloo(LoopbackOptions(dir, 1, 2, timeout));
    ASSERT_TRUE(group.ok()) << group.status().ToString();
    rank1(std::move(*group));
  });
  auto group = ConnectGloo(LoopbackOptions(dir, 0, 2, timeout));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  rank0(**group);
  peer.join();
}

TEST(CollectiveTest, APeerThatDiesFailsTheCollectiveInFlight) {
  RunPair(
      [](Collective& group) {
        ASSERT_TRUE(group.Barrier().ok());
        std::vector<float> send(2000, 1.f), recv(2000);
        const int64_t counts[] = {1000, 1000};
        const auto start = std::chrono::steady_clock::now();
        const Status s = group.AllToAllV(send, counts, recv, counts);
        const double waited = SecondsSince(start);
        EXPECT_EQ(s.code(), StatusCode::kUnavailable);
        EXPECT_NE(s.message().find("AllToAllV"), std::string::npos) << s.ToString();
        std::printf("peer died: Unavailable after %.2f s: %s\n", waited, s.message().c_str());
        EXPECT_LT(waited, 10.0);
        // Broken for good: the next call fails at once.
        const Status again = group.Barrier();
        EXPECT_EQ(again.code(), StatusCode::kUnavailable);
        EXPECT_NE(again.message().find("failed earlier"), std::string::npos) << again.ToString();
      },
      [](std::unique_ptr<Collective> group) {
        ASSERT_TRUE(group->Barrier().ok());
        std::this_thread::sleep_for(200ms);  // rank 0 is inside AllToAllV by now
        group.reset();                       // its sockets close, as when the process dies
      },
      5000ms);
}

TEST(CollectiveTest, APeerThatStopsAnsweringTimesOut) {
  RunPair(
      [](Collective& group) {
        const auto start = std::chrono::steady_clock::now();
        std::string bytes = "request";
        const Status s = group.Broadcast(&bytes, 0);
        const Status b = group.Barrier();
        const double waited = SecondsSince(start);
        // Gloo's send waits for the peer to post its receive, so the
        // broadcast itself times out; the barrier then fails at once.
        EXPECT_EQ(s.code(), StatusCode::kUnavailable);
        EXPECT_NE(s.message().find("Timed out"), std::string::npos) << s.ToString();
        EXPECT_EQ(b.code(), StatusCode::kUnavailable);
        std::printf("peer silent: %s / Unavailable after %.2f s: %s\n", s.ToString().c_str(), waited,
                    b.message().c_str());
        EXPECT_GE(waited, 0.9);
        EXPECT_LT(waited, 10.0);
      },
      [](std::unique_ptr<Collective> group) {
        std::this_thread::sleep_for(3000ms);  // alive, holding its sockets, not calling
        group.reset();
      },
      1000ms);
}

}  // namespace
}  // namespace omni::parallel
