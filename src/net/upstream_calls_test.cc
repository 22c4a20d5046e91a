#include "net/upstream_calls.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

class CountingHandle final : public HttpCallHandle {
 public:
  void Cancel() override { ++cancels; }
  int cancels = 0;
};

TEST(UpstreamCalls, TheDrainDeadlineCancelsRunningCallsAndThoseThatArriveLater) {
  UpstreamCalls calls;
  auto running = std::make_shared<UpstreamCall>();
  auto ended = std::make_shared<UpstreamCall>();
  auto h1 = std::make_shared<CountingHandle>(), h2 = std::make_shared<CountingHandle>();
  calls.Add(running);
  calls.Add(ended);
  running->SetUpstream(h1);
  ended->SetUpstream(h2);
  calls.Remove(ended.get());
  EXPECT_EQ(calls.ShutdownAll(), 1u);
  EXPECT_EQ(h1->cancels, 1);
  EXPECT_TRUE(running->flags().shutting_down);
  EXPECT_EQ(h2->cancels, 0);
  EXPECT_FALSE(ended->flags().shutting_down);

  auto late = std::make_shared<UpstreamCall>();
  calls.Add(late);
  EXPECT_TRUE(late->flags().shutting_down);
  auto h3 = std::make_shared<CountingHandle>();
  late->SetUpstream(h3);  // cancelled as soon as it starts
  EXPECT_EQ(h3->cancels, 1);
}

TEST(UpstreamCalls, AClientGoneCancelsTheExchangeNowOrWhenItStarts) {
  auto call = std::make_shared<UpstreamCall>();
  auto first = std::make_shared<CountingHandle>();
  call->SetUpstream(first);
  call->ClientGone();
  EXPECT_EQ(first->cancels, 1);
  EXPECT_TRUE(call->flags().client_gone);
  EXPECT_FALSE(call->flags().shutting_down);
  auto retry = std::make_shared<CountingHandle>();
  call->SetUpstream(retry);
  EXPECT_EQ(retry->cancels, 1);
}

}  // namespace
}  // namespace omni
