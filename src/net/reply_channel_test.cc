#include "net/internal/reply_channel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace omni::net_internal {
namespace {

TEST(ReplyChannelTest, UnaryReplyIsQueuedOnceAndWakes) {
  int wakes = 0;
  auto ch = std::make_shared<ReplyChannel>("id", 1024, [&] { ++wakes; });
  EXPECT_TRUE(ch->Send(JsonResponse(200, "{}")));
  EXPECT_FALSE(ch->Send(JsonResponse(200, "{}")));
  EXPECT_FALSE(ch->StartStream(200, {}));
  auto items = ch->Take();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].kind, ReplyChannel::Kind::kUnary);
  EXPECT_EQ(wakes, 1);
}

TEST(ReplyChannelTest, StreamSequence) {
  auto ch = std::make_shared<ReplyChannel>("id", 1024, [] {});
  EXPECT_FALSE(ch->Write("too early"));
  EXPECT_TRUE(ch->StartStream(200, {}));
  EXPECT_TRUE(ch->Write("a"));
  EXPECT_TRUE(ch->Write(""));  // ignored: an empty chunk would end the body
  EXPECT_TRUE(ch->Finish());
  EXPECT_FALSE(ch->Write("late"));
  auto items = ch->Take();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].kind, ReplyChannel::Kind::kStreamHead);
  EXPECT_EQ(items[1].chunk, "a");
  EXPECT_EQ(items[2].kind, ReplyChannel::Kind::kFinish);
}

TEST(ReplyChannelTest, ReleaseWithoutReplySends500) {
  auto ch = std::make_shared<ReplyChannel>("id", 1024, [] {});
  { ChannelWriter writer(ch); }
  auto items = ch->Take();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].response.status, 500);
}

TEST(ReplyChannelTest, ReleaseMidStreamAborts) {
  auto ch = std::make_shared<ReplyChannel>("id", 1024, [] {});
  {
    ChannelWriter writer(ch);
    writer.StartStream(200, {});
  }
  auto items = ch->Take();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].kind, ReplyChannel::Kind::kAbort);
}

TEST(ReplyChannelTest, GoneFailsWritesAndRunsCallbackOnce) {
  auto ch = std::make_shared<ReplyChannel>("id", 1024, [] {});
  int calls = 0;
  ch->OnGone([&] { ++calls; });
  ch->StartStream(200, {});
  ch->MarkGone();
  ch->MarkGone();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(ch->gone());
  EXPECT_FALSE(ch->Write("x"));
  ch->OnGone([&] { ++calls; });  // already gone: runs at once
  EXPECT_EQ(calls, 2);
}

TEST(ReplyChannelTest, WriteBlocksUntilConsumed) {
  auto ch = std::make_shared<ReplyChannel>("id", /*buffer_limit=*/4, [] {});
  ch->StartStream(200, {});
  std::atomic<bool> returned{false};
  std::thread producer([&] {
    ch->Write("123456");  // over the limit: waits for the consumer
    returned = true;
  });
  // Wait until the chunk is queued, then release the producer by consuming it.
  std::vector<ReplyChannel::Item> items;
  while (items.size() < 2) {
    for (auto& i : ch->Take()) items.push_back(std::move(i));
    std::this_thread::yield();
  }
  EXPECT_FALSE(returned.load());  // cannot have returned: nothing was consumed yet
  ch->Consumed(6);
  producer.join();
  EXPECT_TRUE(returned.load());
}

TEST(ReplyChannelTest, BlockedWriterIsReleasedWhenClientGoes) {
  auto ch = std::make_shared<ReplyChannel>("id", 1, [] {});
  ch->StartStream(200, {});
  std::atomic<bool> result{true};
  std::thread producer([&] { result = ch->Write("xx"); });
  while (ch->Take().empty()) std::this_thread::yield();  // the head at least
  ch->MarkGone();
  producer.join();
  EXPECT_FALSE(result.load());
}

}  // namespace
}  // namespace omni::net_internal
