#include "services/loadgen/workload.h"

#include <gtest/gtest.h>

#include <set>

namespace omni::loadgen {
namespace {

TEST(WorkloadTest, SyntheticPromptsHaveTheTargetLengthAndNoSystemPrompt) {
  auto w = GenerateWorkload({.kind = WorkloadKind::kSynthetic, .num_requests = 20, .input_len = 37, .seed = 7});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(w->prefixes.empty());
  ASSERT_EQ(w->conversations.size(), 20u);
  EXPECT_EQ(w->total_requests(), 20);
  std::set<std::string> distinct;
  for (const auto& c : w->conversations) {
    EXPECT_EQ(c.prefix_index, -1);
    ASSERT_EQ(c.user_turns.size(), 1u);
    EXPECT_EQ(CountWords(c.user_turns[0]), 37);
    distinct.insert(c.user_turns[0]);
    auto messages = BuildChatMessages(*w, c, 0, {});
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_EQ(messages[0].role, "user");
  }
  EXPECT_EQ(distinct.size(), 20u);
}

TEST(WorkloadTest, SameSeedSameWorkloadOtherSeedOtherWorkload) {
  WorkloadOptions o{.kind = WorkloadKind::kSharedPrefix, .num_requests = 5, .input_len = 8, .num_prefixes = 2,
                    .prefix_len = 16, .seed = 42};
  auto a = GenerateWorkload(o);
  auto b = GenerateWorkload(o);
  o.seed = 43;
  auto c = GenerateWorkload(o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->prefixes, b->prefixes);
  EXPECT_EQ(a->conversations[4].user_turns, b->conversations[4].user_turns);
  EXPECT_NE(a->prefixes, c->prefixes);
}

TEST(WorkloadTest, SharedPrefixRequestsShareOneOfPSystemPromptsAndDifferAfterIt) {
  auto w = GenerateWorkload({.kind = WorkloadKind::kSharedPrefix, .num_requests = 10, .input_len = 12,
                             .num_prefixes = 3, .prefix_len = 50, .seed = 1});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->prefixes.size(), 3u);
  EXPECT_EQ(std::set<std::string>(w->prefixes.begin(), w->prefixes.end()).size(), 3u);
  for (const auto& p : w->prefixes) EXPECT_EQ(CountWords(p), 50);
  std::set<std::string> questions;
  for (const auto& c : w->conversations) {
    EXPECT_EQ(c.prefix_index, c.id % 3);
    ASSERT_EQ(c.user_turns.size(), 1u);
    EXPECT_EQ(CountWords(c.user_turns[0]), 12);
    questions.insert(c.user_turns[0]);
    auto messages = BuildChatMessages(*w, c, 0, {});
    ASSERT_EQ(messages.size(), 2u);
    EXPECT_EQ(messages[0].role, "system");
    EXPECT_EQ(messages[0].content, w->prefixes[static_cast<size_t>(c.id % 3)]);
    // As a completions prompt the system prompt is a literal prefix.
    std::string prompt = RenderCompletionPrompt(messages);
    EXPECT_EQ(prompt, w->prefixes[static_cast<size_t>(c.id % 3)] + "\n\n" + c.user_turns[0]);
  }
  EXPECT_EQ(questions.size(), 10u);
}

TEST(WorkloadTest, MultiTurnSplitsRequestsIntoConversationsAndEachTurnResendsTheHistory) {
  auto w = GenerateWorkload({.kind = WorkloadKind::kMultiTurn, .num_requests = 10, .input_len = 5,
                             .num_prefixes = 2, .prefix_len = 9, .turns = 4, .seed = 3});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  // 10 requests of up to 4 turns: 4 + 4 + 2.
  ASSERT_EQ(w->conversations.size(), 3u);
  EXPECT_EQ(w->conversations[0].user_turns.size(), 4u);
  EXPECT_EQ(w->conversations[1].user_turns.size(), 4u);
  EXPECT_EQ(w->conversations[2].user_turns.size(), 2u);
  EXPECT_EQ(w->total_requests(), 10);
  EXPECT_EQ(w->conversations[2].prefix_index, 0);

  const Conversation& c = w->conversations[1];
  EXPECT_EQ(c.prefix_index, 1);
  std::vector<std::string> answers = {"alpha beta", "gamma delta epsilon", "zeta"};
  std::vector<ChatMessage> previous;
  for (int turn = 0; turn < 4; ++turn) {
    auto messages = BuildChatMessages(*w, c, turn, answers);
    // system + (user, assistant) per earlier turn + the new user turn.
    ASSERT_EQ(messages.size(), static_cast<size_t>(2 + 2 * turn));
    EXPECT_EQ(messages[0].content, w->prefixes[1]);
    // The previous request is a prefix of this one, followed by its answer.
    for (size_t i = 0; i < previous.size(); ++i) {
      EXPECT_EQ(messages[i].role, previous[i].role);
      EXPECT_EQ(messages[i].content, previous[i].content);
    }
    if (turn > 0) {
      EXPECT_EQ(messages[previous.size()].role, "assistant");
      EXPECT_EQ(messages[previous.size()].content, answers[static_cast<size_t>(turn - 1)]);
    }
    EXPECT_EQ(messages.back().role, "user");
    EXPECT_EQ(messages.back().content, c.user_turns[static_cast<size_t>(turn)]);
    previous = messages;
  }
  // Words of the last turn: prefix 9 + 4 user turns of 5 + answers 2 + 3 + 1.
  EXPECT_EQ(CountWords(RenderCompletionPrompt(previous)), 9 + 4 * 5 + 6);
}

TEST(WorkloadTest, RejectsInconsistentOptions) {
  EXPECT_FALSE(GenerateWorkload({.num_requests = 0}).ok());
  EXPECT_FALSE(GenerateWorkload({.input_len = 0}).ok());
  EXPECT_FALSE(GenerateWorkload({.kind = WorkloadKind::kSharedPrefix, .prefix_len = 0}).ok());
  EXPECT_FALSE(GenerateWorkload({.kind = WorkloadKind::kSynthetic, .turns = 3}).ok());
  EXPECT_FALSE(GenerateWorkload({.kind = WorkloadKind::kMultiTurn, .num_prefixes = 0}).ok());
  EXPECT_TRUE(GenerateWorkload({.kind = WorkloadKind::kMultiTurn, .turns = 3}).ok());
}

TEST(WorkloadTest, ParsesKindNames) {
  for (auto k : {WorkloadKind::kSynthetic, WorkloadKind::kSharedPrefix, WorkloadKind::kMultiTurn}) {
    auto parsed = ParseWorkloadKind(WorkloadKindName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_FALSE(ParseWorkloadKind("bursty").ok());
}

TEST(WorkloadTest, CountsWords) {
  EXPECT_EQ(CountWords(""), 0);
  EXPECT_EQ(CountWords("  a  b\n\nc "), 3);
}

}  // namespace
}  // namespace omni::loadgen
