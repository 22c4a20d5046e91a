// sim_prompts: a conversation's turns stay prefixes of each other, in tokens
// and in the serialized messages.
#include "services/routing_sim/sim_prompts.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace omni::routing_sim {
namespace {

TEST(SimPrompts, OneTokenPerWordPlusMarkers) {
  std::vector<loadgen::ChatMessage> m = {{"system", "be brief"}, {"user", "the cat sat"}};
  std::vector<int32_t> t = ChatPromptTokens(m);
  ASSERT_EQ(t.size(), 1 + 2 + 1 + 3 + 1u);
  EXPECT_EQ(t[0], RoleTokenId("system"));
  EXPECT_EQ(t[1], WordTokenId("be"));
  EXPECT_EQ(t[3], RoleTokenId("user"));
  EXPECT_EQ(t.back(), RoleTokenId("assistant"));
  EXPECT_LT(WordTokenId("anything"), kWordVocabulary);
  EXPECT_EQ(SerializeMessages(m),
            R"([{"role":"system","content":"be brief"},{"role":"user","content":"the cat sat"}])");
}

TEST(SimPrompts, TheNextTurnExtendsThePromptAndItsAnswer) {
  loadgen::WorkloadOptions o{.kind = loadgen::WorkloadKind::kMultiTurn, .num_requests = 3, .input_len = 5,
                             .num_prefixes = 1, .prefix_len = 20, .turns = 3, .seed = 9};
  auto w = loadgen::GenerateWorkload(o);
  ASSERT_TRUE(w.ok());
  const loadgen::Conversation& c = w->conversations[0];
  std::vector<std::string> answers;
  auto turn0 = loadgen::BuildChatMessages(*w, c, 0, answers);
  answers.push_back(AnswerText(9, 0, 0, 7));
  auto turn1 = loadgen::BuildChatMessages(*w, c, 1, answers);

  std::vector<int32_t> served = ChatPromptTokens(turn0);
  AppendWordTokens(answers[0], &served);  // what the replica computed
  std::vector<int32_t> next = ChatPromptTokens(turn1);
  ASSERT_GT(next.size(), served.size());
  EXPECT_TRUE(std::equal(served.begin(), served.end(), next.begin()));
  EXPECT_EQ(next.size(), served.size() + 1 + 5 + 1);

  std::string text0 = SerializeMessages(turn0);
  text0.pop_back();  // "]"
  EXPECT_EQ(SerializeMessages(turn1).rfind(text0, 0), 0u);
}

TEST(SimPrompts, AnswersAreDeterministicAndDistinct) {
  EXPECT_EQ(AnswerText(1, 2, 3, 40), AnswerText(1, 2, 3, 40));
  EXPECT_NE(AnswerText(1, 2, 3, 40), AnswerText(1, 2, 4, 40));
  EXPECT_NE(AnswerText(1, 2, 3, 40), AnswerText(1, 3, 3, 40));
  EXPECT_EQ(loadgen::CountWords(AnswerText(1, 2, 3, 40)), 40);
}

}  // namespace
}  // namespace omni::routing_sim
