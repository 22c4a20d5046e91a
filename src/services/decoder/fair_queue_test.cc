#include "services/decoder/fair_queue.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

namespace omni::decoder {
namespace {

// Holds the queue's worker in a first job until Release().
class Gate {
 public:
  std::function<void()> Job() {
    return [this] {
      started_.set_value();
      released_.get_future().wait();
    };
  }
  void WaitStarted() { started_.get_future().wait(); }
  void Release() { released_.set_value(); }

 private:
  std::promise<void> started_, released_;
};

TEST(FairQueueTest, RoundRobinAcrossClientsFifoWithin) {
  FairQueue queue({.max_waiting = 16});
  Gate gate;
  ASSERT_TRUE(queue.Submit("", gate.Job()));
  gate.WaitStarted();
  std::vector<std::string> order;  // written by the worker only
  auto job = [&order](std::string name) { return [&order, name] { order.push_back(name); }; };
  for (const char* name : {"a1", "a2", "a3"}) ASSERT_TRUE(queue.Submit("a", job(name)));
  ASSERT_TRUE(queue.Submit("b", job("b1")));
  ASSERT_TRUE(queue.Submit("c", job("c1")));
  EXPECT_EQ(queue.waiting(), 5u);
  EXPECT_TRUE(queue.running());
  gate.Release();
  queue.WaitIdle();
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "c1", "a2", "a3"}));
  EXPECT_FALSE(queue.running());
}

TEST(FairQueueTest, RefusesBeyondTheBoundAndDropsWaitingJobsOnClose) {
  FairQueue queue({.max_waiting = 2});
  Gate gate;
  ASSERT_TRUE(queue.Submit("x", gate.Job()));
  gate.WaitStarted();
  int ran = 0, dropped = 0;
  EXPECT_TRUE(queue.Submit("x", [&] { ++ran; }, [&] { ++dropped; }));
  EXPECT_TRUE(queue.Submit("y", [&] { ++ran; }, [&] { ++dropped; }));
  EXPECT_FALSE(queue.Submit("z", [&] { ++ran; }, [&] { ++dropped; }));  // full: the caller answers 429
  queue.Close();
  EXPECT_EQ(dropped, 2);
  EXPECT_FALSE(queue.Submit("x", [&] { ++ran; }));  // closed
  gate.Release();
  queue.WaitIdle();
  EXPECT_EQ(ran, 0);
}

// With no waiting room an idle queue still runs one job; while it runs,
// the next is refused.
TEST(FairQueueTest, NoWaitingRoomStillRunsOneJob) {
  FairQueue queue({.max_waiting = 0});
  Gate gate;
  ASSERT_TRUE(queue.Submit("x", gate.Job()));
  gate.WaitStarted();
  EXPECT_FALSE(queue.Submit("y", [] {}));
  gate.Release();
  queue.WaitIdle();
  int ran = 0;
  EXPECT_TRUE(queue.Submit("y", [&] { ++ran; }));
  queue.WaitIdle();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace omni::decoder
