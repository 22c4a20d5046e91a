// ChoiceDecoder on hand-made engine outputs: the token ids of a known text
// (encoded by the tokenizer, which has tests of its own), fed one by one.
#include "services/llm/choice_decoder.h"

#include <gtest/gtest.h>

#include "text/demo_tokenizer.h"

namespace omni::llm {
namespace {

const Tokenizer& DemoTokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    auto json = MakeDemoTokenizerJson(DemoTokenizerSpec{.num_merges = 300, .num_vision_codes = 16, .num_audio_codes = 16});
    OMNI_CHECK(json.ok()) << json.status().ToString();
    auto t = Tokenizer::FromJson(*json);
    OMNI_CHECK(t.ok());
    return std::move(t).value();
  }();
  return *tok;
}

std::vector<int32_t> Ids(std::string_view text) {
  auto ids = DemoTokenizer().Encode(text);
  OMNI_CHECK(ids.ok());
  return *ids;
}

TokenOutput Token(int32_t id, int n, FinishReason finish = FinishReason::kNone) {
  TokenOutput o;
  o.token = SampledToken{.token_id = id, .logprob = -0.5f};
  o.finish_reason = finish;
  o.num_output_tokens = n;
  return o;
}

// The text of every delta, and the finish reason, of one choice fed `outs`.
struct Fed {
  std::string text;
  std::string finish;
  int deltas = 0;
  bool stop_matched = false;
};
Fed Feed(ChoiceDecoder& d, const std::vector<TokenOutput>& outs) {
  Fed f;
  for (const TokenOutput& o : outs) {
    ChoiceDecoder::Result r = d.Push(o);
    f.stop_matched = f.stop_matched || r.stop_string_matched;
    for (const GenerationEvent& e : r.events) {
      EXPECT_EQ(e.choice, 2);
      if (e.kind == GenerationEvent::Kind::kDelta) {
        f.text += e.text;
        ++f.deltas;
      } else {
        f.finish = e.finish_reason;
      }
    }
  }
  return f;
}

TEST(ChoiceDecoder, DeltasJoinToTheTextAndLengthFlushesTheTail) {
  const std::string text = "hello world, this is a test";
  std::vector<int32_t> ids = Ids(text);
  std::vector<TokenOutput> outs;
  for (size_t i = 0; i < ids.size(); ++i) {
    outs.push_back(Token(ids[i], static_cast<int>(i + 1), i + 1 == ids.size() ? FinishReason::kLength : FinishReason::kNone));
  }
  ChoiceDecoder d(DemoTokenizer(), 2, {}, /*logprobs=*/false);
  Fed f = Feed(d, outs);
  EXPECT_EQ(f.text, text);
  EXPECT_EQ(f.finish, "length");
  EXPECT_TRUE(d.finished());
  EXPECT_EQ(d.output_tokens(), static_cast<int>(ids.size()));
  // After the finish nothing more comes out.
  EXPECT_TRUE(d.Push(Token(ids[0], 99)).events.empty());
}

TEST(ChoiceDecoder, StopStringCutsTheTextAndAsksTheEngineToFinish) {
  std::vector<int32_t> ids = Ids("one two three four");
  std::vector<TokenOutput> outs;
  for (size_t i = 0; i < ids.size(); ++i) outs.push_back(Token(ids[i], static_cast<int>(i + 1)));
  ChoiceDecoder d(DemoTokenizer(), 2, {" three"}, false);
  Fed f = Feed(d, outs);
  EXPECT_EQ(f.text, "one two");
  EXPECT_TRUE(f.stop_matched);
  EXPECT_FALSE(d.finished());  // the engine's final output ends it
  Fed end = Feed(d, {TokenOutput{.finish_reason = FinishReason::kStop, .num_output_tokens = 4}});
  EXPECT_EQ(end.text, "");
  EXPECT_EQ(end.finish, "stop");
}

TEST(ChoiceDecoder, StopTokenIsNotShownAndLogprobsComeWithEachToken) {
  std::vector<int32_t> ids = Ids("abc def");
  ChoiceDecoder d(DemoTokenizer(), 2, {}, /*logprobs=*/true);
  int with_logprobs = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (const GenerationEvent& e : d.Push(Token(ids[i], static_cast<int>(i + 1))).events) {
      if (e.kind != GenerationEvent::Kind::kDelta) continue;
      ASSERT_EQ(e.logprobs.size(), 1u);
      EXPECT_EQ(e.logprobs[0].token_id, ids[i]);
      EXPECT_FLOAT_EQ(e.logprobs[0].logprob, -0.5f);
      ++with_logprobs;
    }
  }
  EXPECT_EQ(with_logprobs, static_cast<int>(ids.size()));
  // The EOS token that ends the choice carries kStop and adds no text.
  Fed f = Feed(d, {Token(ids[0], static_cast<int>(ids.size()) + 1, FinishReason::kStop)});
  EXPECT_EQ(f.text, "");
  EXPECT_EQ(f.finish, "stop");
}

}  // namespace
}  // namespace omni::llm
